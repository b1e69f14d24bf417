import { sql } from "drizzle-orm";
import { type AnyPgColumn, type CheckBuilder, check, timestamp } from "drizzle-orm/pg-core";

// Every timestamp is timestamptz: the control plane runs in several regions and runtimes,
// so a bare `timestamp` would silently depend on each session's TimeZone.
export function timestamptz(name: string) {
  return timestamp(name, { withTimezone: true, mode: "date" });
}

export function createdAt() {
  return timestamptz("created_at").notNull().defaultNow();
}

// Enumerations are text + CHECK rather than pgEnum: adding a value is then a plain
// constraint swap inside the migration transaction (ALTER TYPE ... ADD VALUE cannot be
// used in the transaction that adds it).
export function enumCheck(
  name: string,
  column: AnyPgColumn,
  values: readonly string[],
): CheckBuilder {
  for (const value of values) {
    // The values are spliced into DDL as literals, so only allow plain identifiers.
    if (!/^[a-z_]+$/.test(value))
      throw new Error(`enum value ${JSON.stringify(value)} is not [a-z_]+`);
  }
  const list = sql.raw(values.map((value) => `'${value}'`).join(", "));
  return check(name, sql`${column} in (${list})`);
}

// Defence in depth for Workdir paths (shared/ path rules are the primary check): relative,
// no empty / "." / ".." component (so no leading, trailing or double slash, no "://"),
// no backslash. A row that breaks this could make agent-host mount the wrong directory.
export function workdirPathCheck(name: string, column: AnyPgColumn): CheckBuilder {
  return check(
    name,
    sql`${column} ~ '^[^/\\\\]+(/[^/\\\\]+)*$' and ${column} !~ '(^|/)\\.\\.?(/|$)'`,
  );
}
