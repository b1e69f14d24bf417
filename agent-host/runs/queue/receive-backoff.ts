/**
 * Delay before the next receive after `failures` consecutive failed receives (1, 2, …):
 * exponential from `minMs`, capped at `maxMs`, with full jitter so that the nodes of a
 * fleet that lost the queue together do not come back in lockstep. `random` is in [0, 1).
 */
export function receiveBackoffMs(
  failures: number,
  minMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  if (failures <= 0) return 0;
  // 2^30 already exceeds any sane cap; bounding the exponent keeps the math finite.
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(failures - 1, 30));
  return Math.round(minMs + random() * Math.max(0, ceiling - minMs));
}
