import type { Principal } from "./principal.ts";

/**
 * Why a token was refused. Logged for operators, never sent: every refusal answers the
 * same bare 401 so a client cannot probe which check failed.
 */
export type TokenRefusal = { readonly ok: false; readonly reason: string };

export type TokenVerification = { readonly ok: true; readonly principal: Principal } | TokenRefusal;

/**
 * Turns a bearer token into a principal. A bad token is an expected outcome (a value);
 * only a dependency failure (the issuer's key set cannot be fetched) throws.
 */
export interface TokenVerifier {
  verify(token: string, signal: AbortSignal): Promise<TokenVerification>;
}
