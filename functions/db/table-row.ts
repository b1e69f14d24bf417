import { getTableColumns } from "drizzle-orm";
import type { PgTable } from "drizzle-orm/pg-core";

/**
 * A raw row (database column names, driver values) of `table` as the query builder would
 * return it: each value goes through its column's own `mapFromDriverValue`, so a raw
 * statement maps timestamps and JSON exactly like a drizzle query, on either driver.
 */
export function tableRow<T extends PgTable>(
  table: T,
  raw: Record<string, unknown>,
): T["$inferSelect"] {
  const out: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) {
    const value = raw[column.name];
    out[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return out as T["$inferSelect"];
}
