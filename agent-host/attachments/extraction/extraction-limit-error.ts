/**
 * A document stopped by one of extraction's caps (nesting depth, inflated size, entries)
 * rather than by being malformed. The child reports it as `limit: true`, which becomes
 * `extraction_limit` for the batch instead of `attachment_unparseable`.
 */
export class ExtractionLimitError extends Error {
  override readonly name = "ExtractionLimitError";
}

/**
 * V8's own answers to a document that needs more than the process may have: an allocation
 * refused under RLIMIT_AS, a string or array past V8's maximum, a recursion past the stack.
 * They are limits, not parse errors; any other RangeError is the parser's.
 */
const RESOURCE_RANGE_ERRORS =
  /allocation failed|invalid (typed )?array length|invalid string length|maximum call stack|out of memory/i;

export function isResourceLimit(error: unknown): boolean {
  if (error instanceof ExtractionLimitError) return true;
  if (!(error instanceof Error)) return false;
  if ((error as { code?: unknown }).code === "ERR_STRING_TOO_LONG") return true;
  return error instanceof RangeError && RESOURCE_RANGE_ERRORS.test(error.message);
}
