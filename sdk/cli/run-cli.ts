import { parseArgs } from "node:util";
import { WorkcellError } from "../src/index.ts";
import { configPath, loadConfig } from "./cli-config.ts";
import { type CliContext, type CliIo, createContext, EXIT, UsageError } from "./cli-context.ts";
import { COMMAND_HELP } from "./command-help.ts";
import { adminCommand, skillsCommand } from "./commands/admin-commands.ts";
import { approvalsCommand, approveCommand } from "./commands/approval-commands.ts";
import {
  checkpointsCommand,
  forkCommand,
  restoreCommand,
  undoCommand,
} from "./commands/checkpoint-commands.ts";
import { attachCommand, filesCommand } from "./commands/file-commands.ts";
import { loginCommand } from "./commands/login-command.ts";
import { runCommand } from "./commands/run-command.ts";
import { secretsCommand } from "./commands/secrets-command.ts";
import { cancelCommand, changesCommand, threadsCommand } from "./commands/thread-commands.ts";
import { tokensCommand } from "./commands/tokens-command.ts";
import { usageCommand } from "./commands/usage-command.ts";

export const HELP = `workcell: the Workcell API from a terminal

  workcell login --url <api> [--token <t> | --local <uid>]   store the API and your token
                                                (pasted on stdin without --token)
  workcell run "<input>" [--thread <id>] [--max-steps n] [--model m] [--checkpoint]
               [--ask bash|all]
                                                start a run and stream it; exits with the
                                                command's exit code (shell model), 1 if the
                                                run failed or timed out, 130 if cancelled
  workcell threads [ls | show <id> | rm <id>]
  workcell files ls [dir] | cat <path> | put <local> [path] | rm <path>   [--thread <id>]
  workcell attach <file>... [--thread <id>]     attachments into uploads/
  workcell changes [<run_id>]                   files a run changed
  workcell cancel [<run_id>]
  workcell checkpoints [ls | create [label] | rm <id>]   copies of the Workdir [--thread <id>]
  workcell restore <checkpoint_id>              the Workdir becomes the checkpoint [--thread <id>]
  workcell undo [<run_id>]                      restore the checkpoint taken before the run
  workcell fork [<checkpoint_id>]               a new thread from a checkpoint (or the Workdir)
  workcell approvals [<run_id>]                 what a run asks a person to decide
  workcell approve <approval_id> [--for-run | --deny] [--note text] [--run <id>]
  workcell skills
  workcell usage                                your workspace and runs against your limits
  workcell tokens create <name> [--scope s]... [--expires-days n] | list | revoke <id>
                                                personal access tokens (wct_…) for scripts and CI
  workcell secrets set <NAME> --host <pattern>... [--header H] [--template T] < value
                 | list | rm <NAME>             secrets sandboxes use only as placeholders
  workcell admin skills | grant <slug> <uid> | revoke <slug> <uid> | nodes | runtime
                 | limits <uid> [name=value | name=default ...]

  --json         machine-readable output      --url, --token   override the login
  workcell <command> --help                    that command's options
  Without --thread, files/attach use the thread of your last 'workcell run'.
  Exit codes: 0 ok, 1 failed (the run, or the request), 2 usage, 130 cancelled or
  interrupted; 'workcell run' of a command that exits N (shell model): N.
`;

const COMMANDS: Record<string, (ctx: CliContext) => Promise<number>> = {
  login: loginCommand,
  run: runCommand,
  threads: threadsCommand,
  files: filesCommand,
  attach: attachCommand,
  changes: changesCommand,
  cancel: cancelCommand,
  checkpoints: checkpointsCommand,
  restore: restoreCommand,
  undo: undoCommand,
  fork: forkCommand,
  approvals: approvalsCommand,
  approve: approveCommand,
  skills: skillsCommand,
  usage: usageCommand,
  tokens: tokensCommand,
  secrets: secretsCommand,
  admin: adminCommand,
};

/** The CLI as a function: argv in, exit code out (tests call it; main.ts wires the process). */
export async function runCli(
  argv: readonly string[],
  io: CliIo,
  signal: AbortSignal,
): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    io.stderr(`${(error as Error).message}\n\n${HELP}`);
    return EXIT.usage;
  }
  const [command, ...args] = parsed.positionals;
  if (
    command === undefined ||
    command === "help" ||
    (parsed.values.help && !Object.hasOwn(COMMANDS, command))
  ) {
    io.stdout(HELP);
    return command === undefined && !parsed.values.help ? EXIT.usage : EXIT.ok;
  }
  const handler = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (handler === undefined) {
    io.stderr(`unknown command '${command}'\n\n${HELP}`);
    return EXIT.usage;
  }
  if (parsed.values.help) {
    io.stdout(COMMAND_HELP[command] ?? HELP);
    return EXIT.ok;
  }
  const configFile = configPath(io.env);
  try {
    const ctx = createContext({
      io,
      args,
      flags: parsed.values,
      config: await loadConfig(configFile),
      configFile,
      signal,
    });
    return await handler(ctx);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`${error.message}\n`);
      return EXIT.usage;
    }
    if (signal.aborted) {
      // Ctrl-C: what was asked of the server stays asked (a run keeps going).
      io.stderr(
        command === "run"
          ? "interrupted: the run goes on on the server; 'workcell cancel' stops it\n"
          : "interrupted\n",
      );
      return EXIT.cancelled;
    }
    if (parsed.values.json) {
      io.stderr(`${JSON.stringify({ error: describe(error) })}\n`);
    } else {
      io.stderr(`error: ${describe(error).message}\n`);
    }
    return EXIT.failed;
  }
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
      url: { type: "string" },
      token: { type: "string" },
      thread: { type: "string" },
      "max-steps": { type: "string" },
      model: { type: "string" },
      local: { type: "string" },
      issuer: { type: "string" },
      "client-id": { type: "string" },
      admin: { type: "boolean" },
      scope: { type: "string", multiple: true },
      "expires-days": { type: "string" },
      allow: { type: "string" },
      host: { type: "string", multiple: true },
      header: { type: "string" },
      template: { type: "string" },
      checkpoint: { type: "boolean" },
      run: { type: "string" },
      ask: { type: "string" },
      deny: { type: "boolean" },
      "for-run": { type: "boolean" },
      note: { type: "string" },
    },
  });
}

function describe(error: unknown): { code: string; message: string } {
  if (error instanceof WorkcellError) {
    return { code: error.code, message: `${error.message} (${error.code}, HTTP ${error.status})` };
  }
  return { code: "error", message: error instanceof Error ? error.message : String(error) };
}
