import { DEV_TOKEN_AUDIENCE, DEV_TOKEN_ISSUER } from "../../infra/local/dev-token.ts";
import type { FunctionsEnv } from "../../shared/env/functions-env.ts";
import { createCachingTokenVerifier } from "./caching-token-verifier.ts";
import { createDevTokenVerifier } from "./dev-token-verifier.ts";
import { createOidcTokenVerifier } from "./oidc-token-verifier.ts";
import type { TokenVerifier } from "./token-verifier.ts";

/**
 * The verifier AUTH_MODE asks for. Make one per process (per isolate on Workers): the
 * OIDC verifier caches the issuer's keys, and both reuse a verification of a token for a
 * minute at most (caching-token-verifier.ts).
 */
export function createTokenVerifier(env: FunctionsEnv): TokenVerifier {
  return createCachingTokenVerifier(verifierFor(env));
}

function verifierFor(env: FunctionsEnv): TokenVerifier {
  const adminClaim = env.ADMIN_CLAIM === undefined ? {} : { adminClaim: env.ADMIN_CLAIM };
  if (env.AUTH_MODE === "dev") {
    // The issuer and audience that `npm run token` (infra/local/dev-token.ts) signs.
    return createDevTokenVerifier({
      secret: env.DEV_JWT_SECRET,
      issuer: DEV_TOKEN_ISSUER,
      audience: DEV_TOKEN_AUDIENCE,
      ...adminClaim,
    });
  }
  return createOidcTokenVerifier({
    issuer: env.OIDC_ISSUER,
    audience: env.OIDC_AUDIENCE,
    jwksUrl: env.OIDC_JWKS_URL,
    ...adminClaim,
  });
}
