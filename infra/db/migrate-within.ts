import type { Sql } from "postgres";
import { type MigrateOptions, type MigrationResult, migrate } from "./migrate.ts";

/**
 * migrate() with a deadline, for the operator command and the deploy's migrator: waiting on
 * another migrator's lock or a dead server must end. On the deadline it rejects; the caller
 * then ends the client with `timeout: 0`, which cuts the pending query off with its
 * connection (the server drops the session's advisory lock with it).
 */
export async function migrateWithin(
  sql: Sql,
  timeoutMs: number,
  options: MigrateOptions = {},
): Promise<MigrationResult> {
  const deadline = AbortSignal.timeout(timeoutMs);
  let onAbort = () => {};
  const timedOut = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error(`migrations did not finish within ${timeoutMs / 1000} s`));
    deadline.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([migrate(sql, options), timedOut]);
  } finally {
    deadline.removeEventListener("abort", onAbort);
  }
}
