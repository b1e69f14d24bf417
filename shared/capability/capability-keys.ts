import { type CryptoKey, importJWK, type JWK } from "jose";
import type { Ed25519PrivateJwk, Ed25519PublicJwk } from "../env/env-vars.ts";
import { CAPABILITY_ALGORITHM } from "./capability-claims.ts";

/**
 * A signing key: an Ed25519 private JWK as the env schemas parse it (CAPABILITY_PRIVATE_KEY,
 * or `capabilityPrivateJwk` of the local stack's secrets.json), or a CryptoKey imported once
 * with `importCapabilityPrivateKey`.
 */
export type CapabilityPrivateKey = CryptoKey | Ed25519PrivateJwk;
/** A verification key: an Ed25519 public JWK (CAPABILITY_PUBLIC_KEY) or a CryptoKey. */
export type CapabilityPublicKey = CryptoKey | Ed25519PublicJwk;

/**
 * Imports a private JWK once, so a long-lived minter does not re-import it per token.
 * A JWK that is not an Ed25519 private key is refused (TypeError): a configuration error.
 */
export async function importCapabilityPrivateKey(jwk: Ed25519PrivateJwk): Promise<CryptoKey> {
  assertEd25519(jwk, true);
  return importKey(jwk);
}

/**
 * Imports a public JWK once. A JWK carrying the private part `d` is refused: the signing
 * key must never be spread to the agent-hosts (the same rule as ed25519PublicJwkVar).
 */
export async function importCapabilityPublicKey(jwk: Ed25519PublicJwk): Promise<CryptoKey> {
  assertEd25519(jwk, false);
  return importKey(jwk);
}

/** The key to hand to jose, importing a JWK (jose caches JWK imports per object). */
export async function toSigningKey(key: CapabilityPrivateKey): Promise<CryptoKey> {
  return isCryptoKey(key) ? key : importCapabilityPrivateKey(key);
}

export async function toVerificationKey(key: CapabilityPublicKey): Promise<CryptoKey> {
  return isCryptoKey(key) ? key : importCapabilityPublicKey(key);
}

// Structural, not `instanceof`: jose's CryptoKey type covers runtimes whose global differs.
function isCryptoKey(key: CryptoKey | JWK): key is CryptoKey {
  return "algorithm" in key && "type" in key && !("kty" in key);
}

function assertEd25519(jwk: JWK, isPrivate: boolean): void {
  if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") {
    throw new TypeError('A capability key must be an Ed25519 JWK ({"kty":"OKP","crv":"Ed25519"}).');
  }
  const hasPrivatePart = typeof jwk.d === "string";
  if (isPrivate && !hasPrivatePart) {
    throw new TypeError(
      "The capability signing key has no private part 'd': pass the private JWK.",
    );
  }
  if (!isPrivate && hasPrivatePart) {
    throw new TypeError(
      "The capability verification key is a private key: remove the 'd' member and pass only the public key.",
    );
  }
}

async function importKey(jwk: JWK): Promise<CryptoKey> {
  // `alg` and `use` of the stored JWK are not trusted to pick the algorithm: it is fixed.
  const { alg: _alg, use: _use, key_ops: _ops, ...material } = jwk;
  const key = await importJWK(material, CAPABILITY_ALGORITHM);
  if (key instanceof Uint8Array) throw new TypeError("A capability key must be asymmetric.");
  return key;
}
