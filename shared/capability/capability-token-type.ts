import { decodeProtectedHeader } from "jose";
import { MAX_CAPABILITY_TOKEN_CHARS } from "./capability-limits.ts";

/**
 * The `typ` of a token's protected header, read WITHOUT verifying anything, normalized as
 * jose compares it (lowercase, without an `application/` prefix); undefined for anything
 * that does not parse. Only for choosing which verifier to run (and so which
 * refusal to answer: 401 for a bad token, 403 for a genuine one of the wrong type). It is
 * never an authorization decision: each verifier pins its own `typ`, which the signature
 * covers, so lying about it here only gets a token refused by the verifier it picked.
 */
export function capabilityTokenType(token: string): string | undefined {
  if (token.length === 0 || token.length > MAX_CAPABILITY_TOKEN_CHARS) return undefined;
  try {
    const typ = decodeProtectedHeader(token).typ;
    return typeof typ === "string" ? typ.toLowerCase().replace(/^application\//, "") : undefined;
  } catch {
    return undefined;
  }
}
