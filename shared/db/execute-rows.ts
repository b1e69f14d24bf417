import type { SQL } from "drizzle-orm";
import type { DbOrTransaction } from "./client.ts";

/**
 * Rows of a raw statement. `db.execute()` returns the rows themselves on postgres.js and
 * `{rows}` on PGlite (the local one-process mode); both planes must run on both.
 */
export async function executeRows<T>(db: DbOrTransaction, query: SQL): Promise<T[]> {
  return rowsOf<T>(await db.execute(query));
}

/** The rows of a driver's result: the array itself (postgres.js) or its `rows` (PGlite). */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}
