import { describe, expect, test } from "vitest";
import { createCachingTokenVerifier } from "../../../functions/auth/caching-token-verifier.ts";
import { createDevTokenVerifier } from "../../../functions/auth/dev-token-verifier.ts";
import type { TokenVerifier } from "../../../functions/auth/token-verifier.ts";
import {
  DEV_TOKEN_AUDIENCE,
  DEV_TOKEN_ISSUER,
  mintDevToken,
} from "../../../infra/local/dev-token.ts";

const SECRET = "caching-verifier-test-secret-0123456789";

/** The real dev verifier on a settable clock, counting the verifications it does. */
function countingVerifier(clock: { ms: number }) {
  const real = createDevTokenVerifier({
    secret: SECRET,
    issuer: DEV_TOKEN_ISSUER,
    audience: DEV_TOKEN_AUDIENCE,
    now: () => new Date(clock.ms),
  });
  const counted = { calls: 0 };
  const verifier: TokenVerifier = {
    verify(token, signal) {
      counted.calls++;
      return real.verify(token, signal);
    },
  };
  return { verifier, counted };
}

/** The caching verifier over a counting real one, both on one settable clock. */
function cachedOnClock(maxEntries: number, maxAgeMs: number) {
  const clock = { ms: Date.now() };
  const { verifier, counted } = countingVerifier(clock);
  const cached = createCachingTokenVerifier(verifier, {
    maxEntries,
    maxAgeMs,
    now: () => clock.ms,
  });
  return { clock, counted, cached };
}

const signal = () => AbortSignal.timeout(5_000);

describe("caching token verifier", () => {
  test("verifies a token once and answers the same principal from the cache", async () => {
    const { counted, cached } = cachedOnClock(10, 60_000);
    const token = await mintDevToken(SECRET, "alice");
    const first = await cached.verify(token, signal());
    const second = await cached.verify(token, signal());
    expect(first).toEqual({ ok: true, principal: { uid: "alice", admin: false } });
    expect(second).toEqual(first);
    expect(counted.calls).toBe(1);
  });

  test("never caches a refusal: a forged token is checked, and refused, every time", async () => {
    const { counted, cached } = cachedOnClock(10, 60_000);
    const forged = await mintDevToken("another-secret-0123456789-abcdefgh", "alice");
    for (let i = 0; i < 3; i++) {
      expect((await cached.verify(forged, signal())).ok).toBe(false);
    }
    expect(counted.calls).toBe(3);
  });

  test("re-verifies after maxAgeMs, and a token past its exp is refused, not served from the cache", async () => {
    const { clock, counted, cached } = cachedOnClock(10, 1_000);
    const token = await mintDevToken(SECRET, "bob", { ttlSeconds: 120 });
    expect((await cached.verify(token, signal())).ok).toBe(true);
    clock.ms += 1_500;
    expect((await cached.verify(token, signal())).ok).toBe(true);
    expect(counted.calls).toBe(2);
    // Past exp (and the verifier's clock skew): the cache holds nothing beyond exp.
    clock.ms += 10 * 60_000;
    const late = await cached.verify(token, signal());
    expect(late.ok).toBe(false);
    expect(counted.calls).toBe(3);
  });

  test("keeps at most maxEntries tokens, dropping the least recently used", async () => {
    const { counted, cached } = cachedOnClock(2, 60_000);
    const [a, b, c] = await Promise.all(["a", "b", "c"].map((uid) => mintDevToken(SECRET, uid)));
    for (const token of [a, b, a, c] as string[]) await cached.verify(token, signal());
    expect(counted.calls).toBe(3); // a, b, c; the second a was a hit
    await cached.verify(a as string, signal()); // still cached (used after b)
    expect(counted.calls).toBe(3);
    await cached.verify(b as string, signal()); // evicted by c
    expect(counted.calls).toBe(4);
  });
});
