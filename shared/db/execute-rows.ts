import type { SQL } from "drizzle-orm";
import type { DbOrTransaction } from "./client.ts";

/** Rows of a raw statement, typed (drizzle's `execute()` is typed for any driver). */
export async function executeRows<T>(db: DbOrTransaction, query: SQL): Promise<T[]> {
  return rowsOf<T>(await db.execute(query));
}

/** The rows of a postgres.js result (the array itself). */
export function rowsOf<T>(result: unknown): T[] {
  if (!Array.isArray(result)) throw new Error("expected a postgres.js row list");
  return result as T[];
}
