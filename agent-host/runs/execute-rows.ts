import type { SQL } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";

/**
 * Rows of a raw statement. `db.execute()` returns the rows themselves on postgres.js and
 * `{rows}` on PGlite (the local one-process mode); the worker must run on both.
 */
export async function executeRows<T>(db: DbOrTransaction, query: SQL): Promise<T[]> {
  const result: unknown = await db.execute(query);
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}

/** The SQLSTATE of a driver error, drizzle-wrapped or not. */
export function postgresCodeOf(error: unknown): string | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
    e = e.cause;
  }
  return undefined;
}

/** SQLSTATE of a unique violation: a second writer of the same (run_id, seq). */
export const PG_UNIQUE_VIOLATION = "23505";
/** SQLSTATE of a foreign key violation: run_events_prev_fk saw a gap. */
export const PG_FOREIGN_KEY_VIOLATION = "23503";
