import { exportJWK, generateKeyPair } from "jose";
import type { Ed25519PrivateJwk, Ed25519PublicJwk } from "../../../shared/env/env-vars.ts";

export interface TestKeyPair {
  readonly privateJwk: Ed25519PrivateJwk;
  readonly publicJwk: Ed25519PublicJwk;
}

/** A fresh Ed25519 pair as JWKs, the form secrets.json and the env variables hold. */
export async function newKeyPair(): Promise<TestKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", {
    crv: "Ed25519",
    extractable: true,
  });
  return {
    privateJwk: (await exportJWK(privateKey)) as Ed25519PrivateJwk,
    publicJwk: (await exportJWK(publicKey)) as Ed25519PublicJwk,
  };
}
