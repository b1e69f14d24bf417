import {
  CAPABILITY_TOKEN_TYPE,
  type CapabilityClaims,
  capabilityClaimsSchema,
} from "./capability-claims.ts";
import {
  type CapabilityJwtVerification,
  type VerifyCapabilityOptions,
  verifyCapabilityJwt,
} from "./verify-capability-jwt.ts";

export type { CapabilityFailureReason, VerifyCapabilityOptions } from "./verify-capability-jwt.ts";

/** A refused capability is an expected outcome, so it is a value, not an exception. */
export type CapabilityVerification = CapabilityJwtVerification<CapabilityClaims>;

/**
 * Verifies a capability: signature (EdDSA only, with one of the given public keys), `typ`,
 * audience, issuer, expiry, a lifetime no longer than MAX_CAPABILITY_TTL_SECONDS, and the
 * claims schema (canonical Workdir path, known ops). Anything wrong with the token is a
 * `{ok: false}` value; only a broken configuration (a key that is not an Ed25519 public
 * JWK, a tolerance out of bounds) throws.
 */
export async function verifyCapability(
  token: string | undefined,
  options: VerifyCapabilityOptions,
): Promise<CapabilityVerification> {
  return verifyCapabilityJwt(token, options, {
    typ: CAPABILITY_TOKEN_TYPE,
    claimsSchema: capabilityClaimsSchema,
    verifierName: "verifyCapability",
  });
}
