import { decodeJwt, SignJWT } from "jose";
import { expect } from "vitest";
import {
  type CapabilityFailureReason,
  DEFAULT_CAPABILITY_AUDIENCE,
  DEFAULT_CAPABILITY_ISSUER,
  importCapabilityPrivateKey,
} from "../../../shared/capability/index.ts";
import type { Ed25519PrivateJwk } from "../../../shared/env/env-vars.ts";

export const UID = "alice";
export const WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
/** Every token of these tests is minted at T0 and verified a moment after. */
export const T0 = new Date("2030-01-01T00:00:00Z");
export const at = (secondsAfterT0: number) => () => new Date(T0.getTime() + secondsAfterT0 * 1000);

export async function expectRefused(
  result: Promise<{ readonly ok: boolean }>,
  reason: CapabilityFailureReason,
): Promise<void> {
  expect(await result).toEqual({ ok: false, reason });
}

/** The registered claims of a token issued at T0 for 60 s, for hand-made payloads. */
export function registeredClaims(): Record<string, unknown> {
  const iat = Math.floor(T0.getTime() / 1000);
  return {
    aud: DEFAULT_CAPABILITY_AUDIENCE,
    iss: DEFAULT_CAPABILITY_ISSUER,
    iat,
    exp: iat + 60,
    jti: "0b0c4e5e-7a55-4c4e-9a34-0d6c1f7e7f00",
  };
}

/** Signs arbitrary claims and header (alg EdDSA unless overridden), as a misbehaving minter would. */
export async function signRawCapability(
  privateJwk: Ed25519PrivateJwk,
  payload: Record<string, unknown>,
  header: Record<string, unknown>,
): Promise<string> {
  const key = await importCapabilityPrivateKey(privateJwk);
  return new SignJWT(payload).setProtectedHeader({ alg: "EdDSA", ...header }).sign(key);
}

const base64urlJson = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** `token` with `change` merged into its payload, header and signature kept: a tampered token. */
export function withPayloadChanged(token: string, change: Record<string, unknown>): string {
  const [header, , signature] = token.split(".");
  return `${header}.${base64urlJson({ ...decodeJwt(token), ...change })}.${signature}`;
}

/** An unsigned (alg none) token of type `typ` carrying `payload`. */
export function unsignedToken(typ: string, payload: Record<string, unknown>): string {
  return `${base64urlJson({ alg: "none", typ })}.${base64urlJson(payload)}.`;
}
