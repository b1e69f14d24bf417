import { Buffer } from "node:buffer";
import type { CryptoKey } from "jose";
import type { Ed25519PrivateJwk } from "../../shared/env/env-vars.ts";

/** Every personal access token starts so: secret scanners (and people) recognise one. */
export const PERSONAL_TOKEN_PREFIX = "wct_";
const SECRET_BYTES = 32;
const TOKEN_PATTERN = /^wct_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;
const HKDF_INFO = new TextEncoder().encode("workcell personal access tokens v1");

/** A new token: its id and the text handed out once. */
export function newPersonalToken(): { tokenId: string; secret: string; token: string } {
  const tokenId = crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(SECRET_BYTES));
  const secret = base64url(bytes);
  return {
    tokenId,
    secret,
    token: `${PERSONAL_TOKEN_PREFIX}${tokenId.replaceAll("-", "")}_${secret}`,
  };
}

/** The id and secret of a token-shaped string, or undefined (then it is not ours). */
export function parsePersonalToken(token: string): { tokenId: string; secret: string } | undefined {
  const m = TOKEN_PATTERN.exec(token);
  if (m === null) return undefined;
  const hex = m[1] ?? "";
  const tokenId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { tokenId, secret: m[2] ?? "" };
}

/**
 * The HMAC key of the stored hashes, derived (HKDF-SHA256, its own label) from the
 * deployment's capability signing key, which every instance of every runtime already has:
 * no new secret to distribute, and a leaked database alone verifies nothing.
 */
export async function personalTokenKeyFrom(jwk: Ed25519PrivateJwk): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey("raw", fromBase64url(jwk.d), "HKDF", false, [
    "deriveKey",
  ]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: HKDF_INFO },
    base,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign", "verify"],
  );
}

/** A key of this process only (tests, and an app built without one). */
export function ephemeralPersonalTokenKey(): Promise<CryptoKey> {
  return crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256", length: 256 }, false, [
    "sign",
    "verify",
  ]) as Promise<CryptoKey>;
}

/** What the database stores of a secret: its HMAC, hex. */
export async function hashSecret(key: CryptoKey, secret: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(secret));
  return Buffer.from(mac).toString("hex");
}

/** Web Crypto's HMAC verify: a constant-time comparison with the stored hash. */
export function secretMatches(key: CryptoKey, secret: string, storedHex: string): Promise<boolean> {
  return crypto.subtle.verify(
    "HMAC",
    key,
    Buffer.from(storedHex, "hex"),
    new TextEncoder().encode(secret),
  );
}

function base64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

function fromBase64url(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "base64url"));
}
