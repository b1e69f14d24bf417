import { keysCommand } from "./keys-command.ts";
import { migrateCommand } from "./migrate-command.ts";
import { type OpsIo, processIo, UsageError } from "./ops-io.ts";

/** The operator commands `workcell` dispatches here (the client commands live in sdk/). */
export const OPS_COMMANDS = ["migrate", "keys", "doctor"] as const;

const USAGE = `usage: workcell <command> [options]
  migrate          apply the database migrations (any Postgres URL; idempotent)
  keys generate    print a new Ed25519 capability key pair for the env
  doctor           check this node: sandbox tier, data root semantics, image, Postgres/SQS/S3, clock
`;

/** `workcell <command> --help`: each command's own usage (they answered "Unknown option"). */
export const OPS_COMMAND_HELP: Record<(typeof OPS_COMMANDS)[number], string> = {
  migrate: `usage: workcell migrate [--database-url postgres://…] [--timeout-seconds N]
  Applies the database migrations; idempotent, serialized with other migrators by an
  advisory lock; refuses a database migrated by newer code (exit 1, nothing applied).
  --database-url     the Postgres to migrate (default: $DATABASE_URL)
  --timeout-seconds  give up after this long waiting for the lock and applying (default 300)
`,
  keys: `usage: workcell keys generate [--format env|json]
  Prints a new Ed25519 capability key pair: CAPABILITY_PRIVATE_KEY for the control plane,
  CAPABILITY_PUBLIC_KEY for the agent-hosts (also the key personal access tokens are
  hashed under: rotating it invalidates every token).
  --format  env (default: KEY=value lines) or json
`,
  doctor: `usage: workcell doctor [--env-file /etc/workcell/agent-host.env]
  Checks this node: sandbox tiers, the sandbox image, the data root's semantics,
  Postgres, SQS, S3 and the clock; one line each, ok / WARN / FAIL / skip with what to do.
  Exit 0 when nothing failed, 1 otherwise.
  --env-file  read the agent-host settings from this file (default: the environment)
`,
};

type Command = (argv: readonly string[], io: OpsIo) => Promise<number>;

/**
 * Runs one operator command and returns its exit code: 0 done, 1 the command failed (it
 * says why on stderr), 2 a usage mistake. Never throws and never exits the process, so a
 * launcher can call it in-process.
 */
export async function runOpsCommand(argv: string[], io: OpsIo = processIo()): Promise<number> {
  const [name, ...rest] = argv;
  const commands: Record<(typeof OPS_COMMANDS)[number], () => Promise<Command>> = {
    migrate: async () => migrateCommand,
    keys: async () => keysCommand,
    // Loaded on demand: doctor pulls in dockerode, the AWS clients and the libc bindings.
    doctor: async () => (await import("./doctor/doctor-command.ts")).doctorCommand,
  };
  if (name === undefined || name === "help" || name === "--help") {
    io.stdout(USAGE);
    return name === undefined ? 2 : 0;
  }
  if (!Object.hasOwn(commands, name)) {
    io.stderr(`workcell: unknown command ${JSON.stringify(name)}\n${USAGE}`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    io.stdout(OPS_COMMAND_HELP[name as keyof typeof OPS_COMMAND_HELP]);
    return 0;
  }
  try {
    const command = await commands[name as keyof typeof commands]();
    return await command(rest, io);
  } catch (error) {
    if (
      error instanceof UsageError ||
      (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      io.stderr(`workcell ${name}: ${(error as Error).message}\n`);
      return 2;
    }
    // What failed, not where in our code: a trace helps no operator (LOG_LEVEL=debug
    // entries log their own errors with stacks).
    io.stderr(`workcell ${name}: ${(error as Error).message ?? String(error)}\n`);
    return 1;
  }
}
