import { decodeJwt } from "jose";
import type { Principal } from "./principal.ts";
import type { TokenVerifier } from "./token-verifier.ts";

export type TokenCacheOptions = {
  /** Verified tokens kept; the oldest is dropped past it. */
  maxEntries: number;
  /** How long one verification is reused at most (and never past the token's `exp`). */
  maxAgeMs: number;
  now?: () => number;
};

export const DEFAULT_TOKEN_CACHE: TokenCacheOptions = { maxEntries: 1_000, maxAgeMs: 60_000 };

/**
 * Reuses a successful verification of the same bearer token for a short while. A client
 * sends one token with every request, and its signature check (an HMAC or an RSA/ECDSA
 * verify through Web Crypto, a thread-pool hop each) was the largest CPU cost of a run
 * submission after the SQS client (issue 19, decision 0048). Only accepted tokens are kept,
 * each until the earlier of its `exp` and maxAgeMs; a refusal is never cached, so a fixed
 * clock or key set takes effect on the next request. What a cache hit gives up: a key
 * removed from the issuer's JWKS stops a token already seen here within maxAgeMs, not at
 * once. Per verifier instance (per process, per Workers isolate), bounded by maxEntries.
 */
export function createCachingTokenVerifier(
  inner: TokenVerifier,
  options: TokenCacheOptions = DEFAULT_TOKEN_CACHE,
): TokenVerifier {
  const now = options.now ?? Date.now;
  const verified = new Map<string, { principal: Principal; until: number }>();
  return {
    async verify(token, signal) {
      const at = now();
      const hit = verified.get(token);
      if (hit !== undefined) {
        verified.delete(token);
        if (hit.until > at) {
          // Re-inserted: the map's order is least recently used first.
          verified.set(token, hit);
          return { ok: true, principal: hit.principal };
        }
      }
      const result = await inner.verify(token, signal);
      if (!result.ok) return result;
      const exp = decodeJwt(token).exp;
      if (typeof exp !== "number") return result;
      const until = Math.min(exp * 1000, at + options.maxAgeMs);
      if (until <= at) return result;
      verified.set(token, { principal: result.principal, until });
      for (const oldest of verified.keys()) {
        if (verified.size <= options.maxEntries) break;
        verified.delete(oldest);
      }
      return result;
    },
  };
}
