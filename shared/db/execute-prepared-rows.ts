import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { DbOrTransaction } from "./client.ts";
import { rowsOf } from "./execute-rows.ts";

// Stateless (no casing options): it only turns a raw `sql` template into text + params.
const dialect = new PgDialect();

/**
 * Rows of a raw statement run as a prepared statement: on postgres.js a named statement,
 * parsed and planned once per connection and then one Bind/Execute round trip each time.
 * Drizzle runs everything else unnamed, and postgres.js sends a parameterised unnamed
 * statement in TWO round trips (Parse/Describe, wait, Bind/Execute) and PostgreSQL parses
 * and plans it every time; for the submission's CTE that was ≈ 0.6 ms of planning and half
 * its socket writes per request (docs/decisions/0087). For hot statements whose text is
 * fixed (only the parameters vary): every distinct text is one more statement held by each
 * connection. A client made with `prepare: false` (a transaction-mode pooler) still runs
 * it unnamed; PGlite ignores the name. Same result shape as executeRows.
 */
export async function executePreparedRows<T>(
  db: DbOrTransaction,
  name: string,
  query: SQL,
): Promise<T[]> {
  return rowsOf<T>(
    await db._.session.prepareQuery(dialect.sqlToQuery(query), undefined, name, false).execute(),
  );
}
