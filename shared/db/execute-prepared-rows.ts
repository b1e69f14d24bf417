import type { Query, SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { DbOrTransaction } from "./client.ts";
import { rowsOf } from "./execute-rows.ts";

// Stateless (no casing options): it only turns a raw `sql` template into text + params.
const dialect = new PgDialect();

/**
 * A raw statement rendered once: its text and its parameters, named placeholders
 * (`sql.placeholder(name)`) among them, filled per call by executePreparedStatement.
 */
export type PreparedStatement = { readonly name: string; readonly query: Query };

/**
 * Renders `query` once, for a hot statement whose text never changes: drizzle's rendering
 * of a `sql` template (walking its chunks, `is()` checks, building the text) cost more per
 * submission than its parameters' binding (docs/decisions/0089).
 */
export function prepareStatement(name: string, query: SQL): PreparedStatement {
  return { name, query: dialect.sqlToQuery(query) };
}

/**
 * Rows of a statement run as a prepared statement: on postgres.js a named statement,
 * parsed and planned once per connection and then one Bind/Execute round trip each time.
 * Drizzle runs everything else unnamed, and postgres.js sends a parameterised unnamed
 * statement in TWO round trips (Parse/Describe, wait, Bind/Execute) and PostgreSQL parses
 * and plans it every time; for the submission's CTE that was ≈ 0.6 ms of planning and half
 * its socket writes per request (docs/decisions/0087). For hot statements whose text is
 * fixed (only the parameters vary): every distinct text is one more statement held by each
 * connection. A client made with `prepare: false` (a transaction-mode pooler) still runs
 * it unnamed. Same result shape as executeRows. A placeholder
 * without a value in `values` throws before anything is sent.
 */
export async function executePreparedStatement<T>(
  db: DbOrTransaction,
  statement: PreparedStatement,
  values: Readonly<Record<string, unknown>>,
): Promise<T[]> {
  return rowsOf<T>(
    await db._.session
      .prepareQuery(statement.query, undefined, statement.name, false)
      .execute(values as Record<string, unknown>),
  );
}
