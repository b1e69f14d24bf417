/** SQLSTATE of a unique violation. */
const UNIQUE_VIOLATION = "23505";

/**
 * The constraint a unique violation names, anywhere in the cause chain (drizzle wraps
 * the driver's error), or undefined. postgres.js calls it `constraint_name`, PGlite
 * `constraint`.
 */
export function uniqueViolationConstraint(error: unknown): string | undefined {
  for (
    let e: unknown = error, depth = 0;
    e !== null && typeof e === "object" && depth < 5;
    depth++
  ) {
    const candidate = e as { code?: unknown; constraint_name?: unknown; constraint?: unknown };
    if (candidate.code === UNIQUE_VIOLATION) {
      const name = candidate.constraint_name ?? candidate.constraint;
      return typeof name === "string" ? name : "";
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
