import type { CryptoKey } from "jose";
import { importCapabilityPrivateKey } from "../../shared/capability/capability-keys.ts";
import { mintCapability } from "../../shared/capability/mint-capability.ts";
import { mintServiceCapability } from "../../shared/capability/mint-service-capability.ts";
import type { Ed25519PrivateJwk } from "../../shared/env/env-vars.ts";
import type { CapabilityMinter, ServiceCapabilityMinter } from "./capability-minter.ts";

export type CapabilityMinterOptions = {
  /** CAPABILITY_PRIVATE_KEY. */
  privateJwk: Ed25519PrivateJwk;
  /** `aud` / `iss` when the deployment overrides shared/capability's defaults. */
  audience?: string;
  issuer?: string;
};

/**
 * The minter over shared/capability's `mintCapability` (Workdir capabilities) and
 * `mintServiceCapability` (service capabilities: skills). The key is imported once, on first
 * use (so building the app stays synchronous), and reused for every token of both types.
 */
export function createCapabilityMinter(
  options: CapabilityMinterOptions,
): CapabilityMinter & ServiceCapabilityMinter {
  let key: Promise<CryptoKey> | undefined;
  // Key id, audience and issuer are the same for both capability types.
  const tokenOptions = {
    ...(options.privateJwk.kid === undefined ? {} : { keyId: options.privateJwk.kid }),
    ...(options.audience === undefined ? {} : { audience: options.audience }),
    ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
  };
  return {
    async mint(request, signal) {
      key ??= importCapabilityPrivateKey(options.privateJwk);
      const minted = await mintCapability({
        privateKey: await key,
        uid: request.uid,
        workdirPath: request.workdirPath,
        ops: request.ops,
        ...(request.quota === undefined ? {} : { quota: request.quota }),
        ...(request.threadId === undefined ? {} : { threadId: request.threadId }),
        signal,
        ...(request.ttlSeconds === undefined ? {} : { ttlSeconds: request.ttlSeconds }),
        ...(options.privateJwk.kid === undefined ? {} : { keyId: options.privateJwk.kid }),
        ...(options.audience === undefined ? {} : { audience: options.audience }),
        ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
      });
      return { token: minted.token, expiresAt: minted.expiresAt };
    },

    async mintService(request, signal) {
      key ??= importCapabilityPrivateKey(options.privateJwk);
      const minted = await mintServiceCapability({
        privateKey: await key,
        ops: request.ops,
        signal,
        ...(request.uid === undefined ? {} : { uid: request.uid }),
        ...(request.skill === undefined ? {} : { skill: request.skill }),
        ...(request.ttlSeconds === undefined ? {} : { ttlSeconds: request.ttlSeconds }),
        ...tokenOptions,
      });
      return { token: minted.token, expiresAt: minted.expiresAt };
    },
  };
}
