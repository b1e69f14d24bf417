import type { ByteRange } from "../workspace/read-file.ts";

/** What to send for a GET with (or without) a `Range` header, given the file's size. */
export type RangeDecision =
  | { readonly kind: "full" }
  | { readonly kind: "partial"; readonly range: ByteRange }
  | { readonly kind: "unsatisfiable" };

const SINGLE_BYTE_RANGE = /^bytes=(\d*)-(\d*)$/;

/**
 * Interprets a `Range` header (RFC 9110 §14) for a file of `size` bytes.
 *
 * One `bytes=` range is served as 206: `a-b`, `a-` and the suffix `-n`. Anything else is
 * ignored and the whole file is sent (200), as the RFC allows: another unit, several ranges
 * (multipart/byteranges is not worth its cost here), malformed or over-long values. A valid
 * range that starts at or past the end (or any range of an empty file) is unsatisfiable: 416.
 */
export function decideRange(
  header: string | undefined,
  size: number,
  maxHeaderChars: number,
): RangeDecision {
  if (header === undefined || header.length > maxHeaderChars) return { kind: "full" };
  const match = SINGLE_BYTE_RANGE.exec(header.replaceAll(" ", ""));
  if (match === null) return { kind: "full" };
  const [, first = "", last = ""] = match;
  if (first === "" && last === "") return { kind: "full" };
  if (first === "") {
    const suffix = toPosition(last);
    if (suffix === undefined) return { kind: "full" };
    if (suffix === 0 || size === 0) return { kind: "unsatisfiable" };
    return { kind: "partial", range: { start: Math.max(0, size - suffix), end: size - 1 } };
  }
  const start = toPosition(first);
  const end = last === "" ? Number.MAX_SAFE_INTEGER : toPosition(last);
  if (start === undefined || end === undefined || end < start) return { kind: "full" };
  if (start >= size) return { kind: "unsatisfiable" };
  return { kind: "partial", range: { start, end: Math.min(end, size - 1) } };
}

function toPosition(digits: string): number | undefined {
  const value = Number(digits);
  return Number.isSafeInteger(value) ? value : undefined;
}
