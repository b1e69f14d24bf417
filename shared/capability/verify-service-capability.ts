import {
  SERVICE_CAPABILITY_TOKEN_TYPE,
  type ServiceCapabilityClaims,
  serviceCapabilityClaimsSchema,
} from "./service-capability-claims.ts";
import {
  type CapabilityJwtVerification,
  type VerifyCapabilityOptions,
  verifyCapabilityJwt,
} from "./verify-capability-jwt.ts";

/** A refused service capability is an expected outcome: a value, not an exception. */
export type ServiceCapabilityVerification = CapabilityJwtVerification<ServiceCapabilityClaims>;

/**
 * Verifies a service capability exactly as `verifyCapability` verifies a Workdir one (EdDSA
 * only, one of the given keys, audience, issuer, expiry, `iat` not in the future nor older
 * than the longest lifetime, `exp - iat` bounded), except that the `typ` must be
 * SERVICE_CAPABILITY_TOKEN_TYPE and the claims those of serviceCapabilityClaimsSchema.
 *
 * A genuine Workdir capability is refused here as `wrong_type` (jose checks the signature
 * before the `typ`, so that reason is only ever given for a correctly signed token of
 * another type); callers may use it to answer 403 rather than 401.
 */
export async function verifyServiceCapability(
  token: string | undefined,
  options: VerifyCapabilityOptions,
): Promise<ServiceCapabilityVerification> {
  return verifyCapabilityJwt(token, options, {
    typ: SERVICE_CAPABILITY_TOKEN_TYPE,
    claimsSchema: serviceCapabilityClaimsSchema,
    verifierName: "verifyServiceCapability",
  });
}
