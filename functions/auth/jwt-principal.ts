import { errors, type JWTPayload } from "jose";
import { MAX_UID_CHARS } from "../../shared/contracts/common.ts";
import type { TokenRefusal, TokenVerification } from "./token-verifier.ts";

/** The principal of a verified payload: uid = `sub`, admin = `<adminClaim> === true`. */
export function principalFromPayload(
  payload: JWTPayload,
  adminClaim: string | undefined,
): TokenVerification {
  const uid = payload.sub;
  if (typeof uid !== "string" || uid.length === 0 || uid.length > MAX_UID_CHARS) {
    return { ok: false, reason: "sub is missing or too long" };
  }
  // A uid names a directory and database rows: a NUL can be neither.
  if (uid.includes("\u0000")) return { ok: false, reason: "sub holds a NUL character" };
  // Only a literal `true` counts: a string "false" or a number must never grant admin.
  const admin = adminClaim !== undefined && payload[adminClaim] === true;
  return { ok: true, principal: { uid, admin } };
}

/**
 * A jose failure about the token itself becomes a refusal (401). Anything else is
 * rethrown: an outage of the issuer's key set arrives here already as a WorkcellError
 * (`unavailable`, see oidc-token-verifier.ts), and any other error is a bug (500).
 */
export function refusalOf(error: unknown): TokenRefusal {
  if (error instanceof errors.JOSEError) return { ok: false, reason: error.code };
  throw error;
}
