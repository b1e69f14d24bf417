import { createRemoteJWKSet, errors, type JWTVerifyGetKey, jwtVerify } from "jose";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { principalFromPayload, refusalOf } from "./jwt-principal.ts";
import type { TokenVerifier } from "./token-verifier.ts";

/** Accepted clock difference between the issuer and us when checking exp / nbf / iat. */
export const DEFAULT_CLOCK_SKEW_SECONDS = 60;
/** Keys are re-fetched at least this often even if no unknown `kid` shows up. */
export const DEFAULT_JWKS_CACHE_MAX_AGE_MS = 10 * 60_000;
/**
 * After a fetch, an unknown `kid` waits this long before the next one: a rotated key is
 * picked up within it, while a flood of tokens with made-up kids cannot make us hammer
 * the issuer.
 */
export const DEFAULT_JWKS_COOLDOWN_MS = 30_000;
export const DEFAULT_JWKS_TIMEOUT_MS = 5_000;
/** Asymmetric algorithms only: an HS* token "signed" with a public key must never verify. */
export const OIDC_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
] as const;

export type OidcVerifierOptions = {
  issuer: string;
  audience: string;
  jwksUrl: string;
  /** Name of a boolean claim marking admins; unset: nobody is admin. */
  adminClaim?: string;
  clockSkewSeconds?: number;
  jwksCacheMaxAgeMs?: number;
  jwksCooldownMs?: number;
  jwksTimeoutMs?: number;
  /** Fake clock for tests. */
  now?: () => Date;
};

/**
 * Verifies OIDC tokens against the issuer's JWKS. The key set caches keys and re-fetches
 * on an unknown `kid` (key rotation), so create one verifier per process (per isolate on
 * Workers), not per request.
 */
export function createOidcTokenVerifier(options: OidcVerifierOptions): TokenVerifier {
  const remote = createRemoteJWKSet(new URL(options.jwksUrl), {
    cacheMaxAge: options.jwksCacheMaxAgeMs ?? DEFAULT_JWKS_CACHE_MAX_AGE_MS,
    cooldownDuration: options.jwksCooldownMs ?? DEFAULT_JWKS_COOLDOWN_MS,
    timeoutDuration: options.jwksTimeoutMs ?? DEFAULT_JWKS_TIMEOUT_MS,
  });
  const keys: JWTVerifyGetKey = async (header, token) => {
    try {
      return await remote(header, token);
    } catch (error) {
      throw isKeySetOutage(error) ? keySetUnavailable(error) : error;
    }
  };
  return {
    async verify(token, signal) {
      signal.throwIfAborted();
      try {
        const { payload } = await jwtVerify(token, keys, {
          issuer: options.issuer,
          audience: options.audience,
          algorithms: [...OIDC_ALGORITHMS],
          clockTolerance: options.clockSkewSeconds ?? DEFAULT_CLOCK_SKEW_SECONDS,
          requiredClaims: ["sub", "exp"],
          ...(options.now === undefined ? {} : { currentDate: options.now() }),
        });
        return principalFromPayload(payload, options.adminClaim);
      } catch (error) {
        return refusalOf(error);
      }
    },
  };
}

/**
 * The issuer's key set could not be had: fetch failed, timed out, answered non-200 or
 * not a key set. That is an outage (503), not a bad token: answering 401 would make
 * well-behaved clients throw away a perfectly good token. Errors about the token (no
 * key with its `kid`, unsupported `alg`) stay jose errors and become 401.
 */
function isKeySetOutage(error: unknown): boolean {
  if (!(error instanceof errors.JOSEError)) return true;
  return (
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid ||
    error.code === errors.JOSEError.code
  );
}

function keySetUnavailable(cause: unknown): WorkcellError {
  return new WorkcellError(
    "unavailable",
    "The identity provider's signing keys cannot be fetched right now: retry later.",
    { cause },
  );
}
