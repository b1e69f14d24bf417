/** SQLSTATE of a unique violation. */
export const PG_UNIQUE_VIOLATION = "23505";
/** SQLSTATE of a foreign key violation. */
export const PG_FOREIGN_KEY_VIOLATION = "23503";
/** SQLSTATE of a check constraint violation. */
export const PG_CHECK_VIOLATION = "23514";
/** SQLSTATE 55P03: lock_timeout expired while waiting for a lock. */
export const PG_LOCK_NOT_AVAILABLE = "55P03";

/** How deep a cause chain is searched; drizzle wraps the driver's error once. */
const MAX_CAUSE_DEPTH = 5;

const SQLSTATE = /^[0-9A-Z]{5}$/;

interface PgErrorFields {
  readonly code: string;
  /** postgres.js's name for the constraint a violation names. */
  readonly constraint_name?: unknown;
}

/**
 * The Postgres error in an error's cause chain (drizzle wraps the driver's error;
 * postgres.js sets `code`), recognised by a five-character SQLSTATE so that a
 * Node system error (`ECONNREFUSED`) is never taken for one.
 */
function pgErrorOf(error: unknown): PgErrorFields | undefined {
  let e = error;
  for (let depth = 0; e !== null && typeof e === "object" && depth < MAX_CAUSE_DEPTH; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && SQLSTATE.test(code)) return e as PgErrorFields;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The SQLSTATE of a driver error, drizzle-wrapped or not; undefined for anything else. */
export function sqlStateOf(error: unknown): string | undefined {
  return pgErrorOf(error)?.code;
}

/**
 * The constraint a driver error names, whatever its SQLSTATE; undefined when the error is
 * not a Postgres error or names no constraint.
 */
export function constraintOf(error: unknown): string | undefined {
  const pg = pgErrorOf(error);
  const name = pg?.constraint_name;
  return typeof name === "string" ? name : undefined;
}

/**
 * The constraint a unique violation names ("" when the driver gives none), or undefined
 * when the error is not a unique violation.
 */
export function uniqueViolationConstraint(error: unknown): string | undefined {
  if (sqlStateOf(error) !== PG_UNIQUE_VIOLATION) return undefined;
  return constraintOf(error) ?? "";
}
