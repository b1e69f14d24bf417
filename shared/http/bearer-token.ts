/** A JWT longer than this is not one we issue or accept; refuse it before any parsing. */
export const MAX_BEARER_TOKEN_CHARS = 16 * 1024;

/** RFC 6750 §2.1: `Bearer` 1*SP b64token; tabs and trailing blanks are tolerated. */
const BEARER = /^Bearer[ \t]+([A-Za-z0-9._~+/-]+=*)[ \t]*$/i;

/**
 * The token of an `Authorization: Bearer <token>` header, or undefined (no header, another
 * scheme, a malformed or oversized token). One parser for both planes, so a token one
 * plane accepts is never refused by the other for its spelling.
 */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined || header.length > MAX_BEARER_TOKEN_CHARS + 16) return undefined;
  return BEARER.exec(header)?.[1];
}
