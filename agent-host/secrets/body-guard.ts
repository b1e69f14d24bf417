/**
 * Scans a request body as it streams for any of `needles` (placeholders that may not go to
 * this host). It holds back the last `longest - 1` bytes of what it has seen, so a needle
 * split across chunks is found before any byte of it was passed on: `push` answers the
 * bytes that are safe to send now, or `undefined` once a needle was found (the caller
 * then cuts the request; what was already sent holds no whole needle).
 */
export type BodyGuard = {
  push(chunk: Buffer): Buffer | undefined;
  /** The held-back tail, at the end of the body. */
  end(): Buffer;
};

export function createBodyGuard(needles: readonly Buffer[]): BodyGuard {
  const keep = Math.max(0, ...needles.map((needle) => needle.length - 1));
  let tail: Buffer = Buffer.alloc(0);
  return {
    push(chunk) {
      const window = tail.length === 0 ? chunk : Buffer.concat([tail, chunk]);
      if (needles.some((needle) => window.includes(needle))) return undefined;
      const cut = Math.max(0, window.length - keep);
      tail = window.subarray(cut);
      return window.subarray(0, cut);
    },
    end() {
      const rest = tail;
      tail = Buffer.alloc(0);
      return rest;
    },
  };
}
