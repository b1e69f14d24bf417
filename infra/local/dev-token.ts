import { SignJWT } from "jose";

/** Issuer and audience of local dev tokens; the local auth verifier expects exactly these. */
export const DEV_TOKEN_ISSUER = "workcell-local";
export const DEV_TOKEN_AUDIENCE = "workcell";
export const DEV_TOKEN_TTL_SECONDS = 12 * 60 * 60;

/** An HS256 token for any uid (local mode only; production verifies OIDC tokens). */
export async function mintDevToken(
  secret: string,
  uid: string,
  options: { admin?: boolean; ttlSeconds?: number } = {},
): Promise<string> {
  return new SignJWT(options.admin ? { admin: true } : {})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(uid)
    .setIssuer(DEV_TOKEN_ISSUER)
    .setAudience(DEV_TOKEN_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(`${options.ttlSeconds ?? DEV_TOKEN_TTL_SECONDS}s`)
    .sign(new TextEncoder().encode(secret));
}
