import { createHash } from "node:crypto";

/**
 * The binding of an approval (docs/architecture.md §14): SHA-256 over the tool name and its
 * arguments in canonical JSON (object keys sorted, so PostgreSQL's jsonb, which reorders
 * keys, gives the same hash as the model's text). Arguments that are not JSON are hashed as
 * the raw string they are.
 */
export function approvalHash(tool: string, args: unknown): string {
  return createHash("sha256")
    .update(`${tool}\n${canonicalJson(args)}`)
    .digest("hex");
}

/** The model's raw argument text as the value an approval shows and binds. */
export function approvalArguments(raw: string): unknown {
  try {
    return JSON.parse(raw === "" ? "{}" : raw);
  } catch {
    return raw;
  }
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
