import { createHash } from "node:crypto";

/**
 * SHA-256 (hex) of a value's canonical JSON (object keys sorted at every level), so the
 * same request sent with its fields in another order is still "the same body".
 * node:crypto's synchronous hash, not Web Crypto's digest: for a request body the async
 * digest's thread-pool hop cost more than the hash itself (issue 19); Workers have it
 * through `nodejs_compat` (infra/wrangler.toml), Lambda and Node natively.
 */
export function requestHash(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}

export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const field = (value as Record<string, unknown>)[key];
    if (field !== undefined) sorted[key] = sortKeys(field);
  }
  return sorted;
}
