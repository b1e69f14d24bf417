import { parseArgs } from "node:util";
import postgres from "postgres";
import { postgresUrlVar } from "../../shared/env/env-vars.ts";
import { migrateWithin } from "../db/migrate-within.ts";
import { SchemaNewerThanCodeError } from "../db/schema-version.ts";
import { type OpsIo, UsageError } from "./ops-io.ts";

/** Connecting must not hang a deploy script: the server answers within this or is reported down. */
export const MIGRATE_CONNECT_TIMEOUT_SECONDS = 10;
/** Waiting for another migrator's lock plus applying; past this the command gives up. */
export const DEFAULT_MIGRATE_TIMEOUT_SECONDS = 300;

const USAGE =
  "usage: workcell migrate [--database-url postgres://…] [--timeout-seconds N]\n" +
  "  (default: $DATABASE_URL)";

/**
 * `workcell migrate`: the migrator of the local mode (infra/db/migrate.ts) against any
 * Postgres URL. Idempotent; serialized with other migrators by an advisory lock; refuses
 * a database migrated by newer code (exit 1, nothing applied).
 */
export async function migrateCommand(argv: readonly string[], io: OpsIo): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      "database-url": { type: "string" },
      "timeout-seconds": { type: "string", default: String(DEFAULT_MIGRATE_TIMEOUT_SECONDS) },
    },
    strict: true,
  });
  const url = values["database-url"] ?? io.env.DATABASE_URL;
  if (!url) throw new UsageError(`no database: pass --database-url or set DATABASE_URL\n${USAGE}`);
  if (!postgresUrlVar().safeParse(url).success) {
    // Never echo the URL: it usually carries the password.
    throw new UsageError("--database-url must be a postgres:// or postgresql:// URL");
  }
  const timeoutSeconds = Number(values["timeout-seconds"]);
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1) {
    throw new UsageError("--timeout-seconds must be a whole number of seconds, at least 1");
  }
  const sql = postgres(url, {
    max: 2,
    connect_timeout: MIGRATE_CONNECT_TIMEOUT_SECONDS,
    onnotice: () => {},
  });
  let finished = false;
  try {
    const result = await migrateWithin(sql, timeoutSeconds * 1000);
    finished = true;
    io.stdout(
      result.applied === 0
        ? `migrate: database is current (${result.total} migrations, none to apply)\n`
        : `migrate: applied ${result.applied} of ${result.total} migrations; database is current\n`,
    );
    return 0;
  } catch (error) {
    if (error instanceof SchemaNewerThanCodeError) {
      io.stderr(`migrate: refused: ${error.message}\n`);
    } else {
      io.stderr(`migrate: failed: ${(error as Error).message}\n`);
    }
    return 1;
  } finally {
    // After a failure or a timeout the pending query is cut off with the connection.
    await sql.end({ timeout: finished ? 5 : 0 });
  }
}
