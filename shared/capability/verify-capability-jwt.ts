import { errors, type JWTPayload, jwtVerify } from "jose";
import type { z } from "zod";
import { CAPABILITY_ALGORITHM, DEFAULT_CAPABILITY_ISSUER } from "./capability-claims.ts";
import { type CapabilityPublicKey, toVerificationKey } from "./capability-keys.ts";
import {
  DEFAULT_CAPABILITY_CLOCK_TOLERANCE_SEC,
  MAX_CAPABILITY_CLOCK_TOLERANCE_SEC,
  MAX_CAPABILITY_TOKEN_CHARS,
  MAX_CAPABILITY_TTL_SECONDS,
} from "./capability-limits.ts";

/** Why a capability was refused; for logs and tests, never a reason to accept. */
export type CapabilityFailureReason =
  | "missing"
  | "malformed"
  | "wrong_type"
  | "wrong_algorithm"
  | "bad_signature"
  | "expired"
  | "not_yet_valid"
  | "lifetime_too_long"
  | "wrong_audience"
  | "wrong_issuer"
  | "bad_claims";

/** A refused capability is an expected outcome, so it is a value, not an exception. */
export type CapabilityJwtVerification<Claims> =
  | { readonly ok: true; readonly claims: Claims }
  | { readonly ok: false; readonly reason: CapabilityFailureReason };

export interface VerifyCapabilityOptions {
  /** The minter's public key, or several while keys rotate (each is tried in turn). */
  readonly publicKey: CapabilityPublicKey | readonly CapabilityPublicKey[];
  /** The `aud` this verifier serves; a capability for another data plane is refused. */
  readonly audience: string;
  /** Default DEFAULT_CAPABILITY_ISSUER. */
  readonly issuer?: string;
  /** Default DEFAULT_CAPABILITY_CLOCK_TOLERANCE_SEC, at most MAX_CAPABILITY_CLOCK_TOLERANCE_SEC. */
  readonly clockToleranceSec?: number;
  /** The clock (tests); default the system clock. */
  readonly now?: () => Date;
  readonly signal?: AbortSignal;
}

/** What tells one kind of capability from another: each verifier pins its own. */
export interface CapabilityJwtKind<Claims extends { readonly iat: number; readonly exp: number }> {
  /** The JWS `typ` header the token must carry (covered by the signature). */
  readonly typ: string;
  readonly claimsSchema: z.ZodType<Claims>;
  /** The public verifier's name, for configuration errors. */
  readonly verifierName: string;
}

/**
 * The steps shared by verifyCapability and verifyServiceCapability: signature (EdDSA only,
 * with one of the given public keys), `typ`, audience, issuer, expiry, `iat` not in the
 * future nor older than the longest lifetime, `exp - iat` no longer than
 * MAX_CAPABILITY_TTL_SECONDS, and the kind's claims schema. Anything wrong with the token is
 * a `{ok: false}` value; only a broken configuration (a key that is not an Ed25519 public
 * JWK, a tolerance out of bounds) throws.
 */
export async function verifyCapabilityJwt<
  Claims extends { readonly iat: number; readonly exp: number },
>(
  token: string | undefined,
  options: VerifyCapabilityOptions,
  kind: CapabilityJwtKind<Claims>,
): Promise<CapabilityJwtVerification<Claims>> {
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
    throw new TypeError(`${kind.verifierName} needs at least one public key.`);
  }
  // Imported before the token is looked at: a bad key is the operator's error (throws), and
  // must not be confused with a bad token.
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
        typ: kind.typ,
        audience: options.audience,
        issuer: options.issuer ?? DEFAULT_CAPABILITY_ISSUER,
        clockTolerance: tolerance,
        // An `iat` in the future or older than the longest lifetime is refused as well.
        maxTokenAge: MAX_CAPABILITY_TTL_SECONDS,
        requiredClaims: ["iat", "exp", "jti"],
        ...(options.now === undefined ? {} : { currentDate: options.now() }),
      }));
      break;
    } catch (err) {
      const reason = failureReasonOf(err);
      // Another key of a rotation may have signed it; any other failure is final (jose
      // checks the signature before the claims, so the reason is about a genuine token).
      if (reason === "bad_signature") continue;
      return refused(reason);
    }
  }
  if (payload === undefined) return refused("bad_signature");

  const parsed = kind.claimsSchema.safeParse(payload);
  if (!parsed.success) return refused("bad_claims");
  const claims = parsed.data;
  // A correctly signed token living longer than any minter may issue means the minter is
  // misconfigured or its key is in the wrong hands: refuse rather than honour it.
  if (claims.exp - claims.iat > MAX_CAPABILITY_TTL_SECONDS) return refused("lifetime_too_long");
  return { ok: true, claims };
}

function refused(reason: CapabilityFailureReason): { ok: false; reason: CapabilityFailureReason } {
  return { ok: false, reason };
}

/** Maps a jose verification error to a refusal reason. */
function failureReasonOf(err: unknown): CapabilityFailureReason {
  if (err instanceof errors.JWTExpired) return "expired";
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case "aud":
        return "wrong_audience";
      case "iss":
        return "wrong_issuer";
      case "typ":
        return "wrong_type";
      case "iat":
      case "nbf":
        return err.reason === "check_failed" ? "not_yet_valid" : "bad_claims";
      default:
        return "bad_claims";
    }
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return "bad_signature";
  if (err instanceof errors.JOSEAlgNotAllowed) return "wrong_algorithm";
  if (err instanceof errors.JOSEError) return "malformed";
  // jose throws TypeError for some malformed inputs (e.g. a key/alg mismatch on a crafted
  // header); a token must never be able to turn into a 500.
  if (err instanceof TypeError) return "malformed";
  throw err;
}
