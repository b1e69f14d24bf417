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
  now?: () => Date;
};

/**
 * Local mode only (AUTH_MODE=dev): HS256 tokens signed with a shared secret, minted by
 * `npm run token`. Same claims checks as OIDC, so code paths do not diverge.
 */
export function createDevTokenVerifier(options: DevVerifierOptions): TokenVerifier {
  const key = new TextEncoder().encode(options.secret);
  return {
    async verify(token, signal) {
      signal.throwIfAborted();
      try {
        const { payload } = await jwtVerify(token, key, {
          issuer: options.issuer,
          audience: options.audience,
          algorithms: ["HS256"],
          clockTolerance: DEFAULT_CLOCK_SKEW_SECONDS,
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
