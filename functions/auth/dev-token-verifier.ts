import { jwtVerify } from "jose";
import { principalFromPayload, refusalOf } from "./jwt-principal.ts";
import { DEFAULT_CLOCK_SKEW_SECONDS } from "./oidc-token-verifier.ts";
import type { TokenVerifier } from "./token-verifier.ts";

export type DevVerifierOptions = {
  /** The HS256 secret (DEV_JWT_SECRET; the local Workcell keeps it in DATA_DIR/secrets.json). */
  secret: string;
  issuer: string;
  audience: string;
  adminClaim?: string;
  /** Longest accepted lifetime (`exp - iat`); default MAX_DEV_TOKEN_LIFETIME_SECONDS. */
  maxLifetimeSeconds?: number;
  now?: () => Date;
};

/**
 * Dev tokens are bearer secrets anyone with the dev secret can mint for any uid; a long
 * lifetime turns one leaked token into a permanent credential. `npm run token` mints 12 h
 * tokens; anything claiming to live longer than a day (or carrying no `iat` to measure by)
 * is refused, whatever its signature.
 */
export const MAX_DEV_TOKEN_LIFETIME_SECONDS = 24 * 60 * 60;

/**
 * Local mode only (AUTH_MODE=dev): HS256 tokens signed with a shared secret, minted by
 * `npm run token`. Same claims checks as OIDC, so code paths do not diverge.
 */
export function createDevTokenVerifier(options: DevVerifierOptions): TokenVerifier {
  const key = new TextEncoder().encode(options.secret);
  const maxLifetime = options.maxLifetimeSeconds ?? MAX_DEV_TOKEN_LIFETIME_SECONDS;
  return {
    async verify(token, signal) {
      signal.throwIfAborted();
      try {
        const { payload } = await jwtVerify(token, key, {
          issuer: options.issuer,
          audience: options.audience,
          algorithms: ["HS256"],
          clockTolerance: DEFAULT_CLOCK_SKEW_SECONDS,
          requiredClaims: ["sub", "exp", "iat"],
          // jose checks iat is not older than this; the lifetime check below bounds exp.
          maxTokenAge: maxLifetime,
          ...(options.now === undefined ? {} : { currentDate: options.now() }),
        });
        const { exp, iat } = payload as { exp: number; iat: number };
        if (exp - iat > maxLifetime) {
          return { ok: false, reason: `lifetime over ${maxLifetime} s` };
        }
        return principalFromPayload(payload, options.adminClaim);
      } catch (error) {
        return refusalOf(error);
      }
    },
  };
}
