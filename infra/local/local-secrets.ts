import { randomBytes } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { exportJWK, generateKeyPair, type JWK } from "jose";

/**
 * Secrets of the local Workcell, made once and kept in `<data-dir>/secrets.json` (0600)
 * so that tokens and capabilities stay valid across restarts: the HS256 secret that dev
 * tokens are signed with, and the Ed25519 key pair for data-plane capabilities.
 */
export type LocalSecrets = {
  devJwtSecret: string;
  capabilityPrivateJwk: JWK;
  capabilityPublicJwk: JWK;
};

export function localSecretsPath(dataDir: string): string {
  return join(dataDir, "secrets.json");
}

export async function loadOrCreateLocalSecrets(dataDir: string): Promise<LocalSecrets> {
  const path = localSecretsPath(dataDir);
  try {
    return JSON.parse(await readFile(path, "utf8")) as LocalSecrets;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const { privateKey, publicKey } = await generateKeyPair("EdDSA", {
    crv: "Ed25519",
    extractable: true,
  });
  const secrets: LocalSecrets = {
    devJwtSecret: randomBytes(32).toString("base64url"),
    capabilityPrivateJwk: await exportJWK(privateKey),
    capabilityPublicJwk: await exportJWK(publicKey),
  };
  // "wx": two processes starting at once cannot both write; the loser reads the winner's.
  await writeFile(path, JSON.stringify(secrets, null, 2), { mode: 0o600, flag: "wx" }).catch(
    async (error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
    },
  );
  return JSON.parse(await readFile(path, "utf8")) as LocalSecrets;
}
