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
    io.stderr(`workcell ${name}: ${(error as Error).stack ?? String(error)}\n`);
    return 1;
  }
}
