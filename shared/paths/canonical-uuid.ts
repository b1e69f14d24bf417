const HYPHENATED_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const COMPACT_UUID = /^[0-9a-f]{32}$/i;
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The lowercase hyphenated form of a UUID written as `xxxxxxxx-xxxx-…` (any case),
 * `{…}` (braces around either form) or 32 hex digits; `undefined` for anything else.
 * The version nibble is not checked: ids minted elsewhere may be v7 or v4.
 */
export function canonicalUuid(raw: string): string | undefined {
  const inner = raw.startsWith("{") && raw.endsWith("}") ? raw.slice(1, -1) : raw;
  if (HYPHENATED_UUID.test(inner)) return inner.toLowerCase();
  if (COMPACT_UUID.test(inner)) {
    const hex = inner.toLowerCase();
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
  return undefined;
}

/** True only for the canonical form `canonicalUuid` returns. */
export function isCanonicalUuid(value: string): boolean {
  return CANONICAL_UUID.test(value);
}
