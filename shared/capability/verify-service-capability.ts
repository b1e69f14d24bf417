import { type JWTPayload, jwtVerify } from "jose";
import { CAPABILITY_ALGORITHM, DEFAULT_CAPABILITY_ISSUER } from "./capability-claims.ts";
import { type CapabilityPublicKey, toVerificationKey } from "./capability-keys.ts";
import {
  DEFAULT_CAPABILITY_CLOCK_TOLERANCE_SEC,
  MAX_CAPABILITY_CLOCK_TOLERANCE_SEC,
  MAX_CAPABILITY_TOKEN_CHARS,
  MAX_CAPABILITY_TTL_SECONDS,
} from "./capability-limits.ts";
import {
  SERVICE_CAPABILITY_TOKEN_TYPE,
  type ServiceCapabilityClaims,
  serviceCapabilityClaimsSchema,
} from "./service-capability-claims.ts";
import {
  type CapabilityFailureReason,
  failureReasonOf,
  type VerifyCapabilityOptions,
} from "./verify-capability.ts";

/** A refused service capability is an expected outcome: a value, not an exception. */
export type ServiceCapabilityVerification =
  | { readonly ok: true; readonly claims: ServiceCapabilityClaims }
  | { readonly ok: false; readonly reason: CapabilityFailureReason };

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
  options.signal?.throwIfAborted();
  const tolerance = options.clockToleranceSec ?? DEFAULT_CAPABILITY_CLOCK_TOLERANCE_SEC;
  if (
    !Number.isFinite(tolerance) ||
    tolerance < 0 ||
    tolerance > MAX_CAPABILITY_CLOCK_TOLERANCE_SEC
  ) {
    throw new RangeError(
      `clockToleranceSec must be 0 to ${MAX_CAPABILITY_CLOCK_TOLERANCE_SEC}, got ${tolerance}.`,
    );
  }
  const keyList: readonly CapabilityPublicKey[] = Array.isArray(options.publicKey)
    ? options.publicKey
    : [options.publicKey as CapabilityPublicKey];
  if (keyList.length === 0) {
    throw new TypeError("verifyServiceCapability needs at least one public key.");
  }
  // Imported before the token is looked at: a bad key is the operator's error, not the token's.
  const keys = await Promise.all(keyList.map(toVerificationKey));

  if (token === undefined || token.length === 0) return refused("missing");
  // Bounded before parsing: the JOSE parser base64-decodes and JSON-parses what it is given.
  if (token.length > MAX_CAPABILITY_TOKEN_CHARS) return refused("malformed");

  let payload: JWTPayload | undefined;
  for (const key of keys) {
    options.signal?.throwIfAborted();
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: [CAPABILITY_ALGORITHM],
        typ: SERVICE_CAPABILITY_TOKEN_TYPE,
        audience: options.audience,
        issuer: options.issuer ?? DEFAULT_CAPABILITY_ISSUER,
        clockTolerance: tolerance,
        maxTokenAge: MAX_CAPABILITY_TTL_SECONDS,
        requiredClaims: ["iat", "exp", "jti"],
        ...(options.now === undefined ? {} : { currentDate: options.now() }),
      }));
      break;
    } catch (err) {
      const reason = failureReasonOf(err);
      // Another key of a rotation may have signed it; any other failure is final.
      if (reason === "bad_signature") continue;
      return refused(reason);
    }
  }
  if (payload === undefined) return refused("bad_signature");

  const parsed = serviceCapabilityClaimsSchema.safeParse(payload);
  if (!parsed.success) return refused("bad_claims");
  const claims = parsed.data;
  // Correctly signed yet longer-lived than any minter may issue: a misconfigured minter or
  // a key in the wrong hands. Refused, as for Workdir capabilities.
  if (claims.exp - claims.iat > MAX_CAPABILITY_TTL_SECONDS) return refused("lifetime_too_long");
  return { ok: true, claims };
}

function refused(reason: CapabilityFailureReason): ServiceCapabilityVerification {
  return { ok: false, reason };
}
