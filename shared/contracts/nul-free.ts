/**
 * The path (dot-joined, e.g. `files.0.name`) of the first string holding a NUL character
 * in a parsed input, keys included, or undefined. PostgreSQL text cannot store NUL, so
 * such an input must be refused at the edge (400) instead of reaching a query that fails
 * with the whole input in its error.
 */
export function firstNulPath(value: unknown, path: readonly string[] = []): string | undefined {
  if (typeof value === "string") return value.includes("\u0000") ? path.join(".") : undefined;
  if (value === null || typeof value !== "object") return undefined;
  for (const [key, inner] of Object.entries(value)) {
    if (key.includes("\u0000")) return [...path, "<key>"].join(".");
    const found = firstNulPath(inner, [...path, key]);
    if (found !== undefined) return found;
  }
  return undefined;
}
