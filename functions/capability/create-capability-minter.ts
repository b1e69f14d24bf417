import type { CryptoKey } from "jose";
import { importCapabilityPrivateKey } from "../../shared/capability/capability-keys.ts";
import { mintCapability } from "../../shared/capability/mint-capability.ts";
import type { Ed25519PrivateJwk } from "../../shared/env/env-vars.ts";
import type { CapabilityMinter } from "./capability-minter.ts";

export type CapabilityMinterOptions = {
  /** CAPABILITY_PRIVATE_KEY. */
  privateJwk: Ed25519PrivateJwk;
  /** `aud` / `iss` when the deployment overrides shared/capability's defaults. */
  audience?: string;
  issuer?: string;
};

/**
 * The minter over shared/capability's `mintCapability`. The key is imported once, on first
 * use (so building the app stays synchronous), and reused for every token.
 */
export function createCapabilityMinter(options: CapabilityMinterOptions): CapabilityMinter {
  let key: Promise<CryptoKey> | undefined;
  return {
    async mint(request, signal) {
      key ??= importCapabilityPrivateKey(options.privateJwk);
      const minted = await mintCapability({
        privateKey: await key,
        uid: request.uid,
        workdirPath: request.workdirPath,
        ops: request.ops,
        signal,
        ...(request.ttlSeconds === undefined ? {} : { ttlSeconds: request.ttlSeconds }),
        ...(options.privateJwk.kid === undefined ? {} : { keyId: options.privateJwk.kid }),
        ...(options.audience === undefined ? {} : { audience: options.audience }),
        ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
      });
      return { token: minted.token, expiresAt: minted.expiresAt };
    },
  };
}
