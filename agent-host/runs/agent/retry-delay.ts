/**
 * Delay before retry number `attempt` (0 = the first retry): the server's Retry-After
 * when it gave one, else exponential backoff with full jitter (a random delay up to the
 * exponential bound, so clients rate-limited together do not retry together). Both are
 * capped at `maxDelayMs`.
 */
export function retryDelayMs(p: {
  readonly attempt: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly retryAfterMs: number | undefined;
  readonly random: () => number;
}): number {
  if (p.retryAfterMs !== undefined) return Math.min(p.retryAfterMs, p.maxDelayMs);
  const bound = Math.min(p.maxDelayMs, p.baseDelayMs * 2 ** p.attempt);
  return Math.floor(p.random() * bound);
}

/** `Retry-After` as milliseconds from `nowMs`: delta-seconds or an HTTP date; else undefined. */
export function parseRetryAfterMs(header: string | null, nowMs: number): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
