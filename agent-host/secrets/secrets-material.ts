import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "pino";
import {
  type SecretKeysEnv,
  secretKeysFromEnv,
} from "../../shared/secrets/secret-keys-from-env.ts";
import { type DeploymentCa, generateDeploymentCa, readDeploymentCa } from "./deployment-ca.ts";
import type { NodeSecretsConfig } from "./node-secrets.ts";
import { RUNTIME_CA_BUNDLE } from "./secrets-env.ts";

/** The files of a deployment's secrets material (decision 0133). */
export const MATERIAL_FILES = { key: "secrets.key", caCert: "ca-cert.pem", caKey: "ca-key.pem" };

export type SecretsMaterial = { readonly keyBase64: string; readonly ca: DeploymentCa };

/**
 * Reads `dir`'s key and CA, making any that is missing (0600 files in a 0700 directory):
 * what `npm run secrets:ca` does at install and local mode does on its first start.
 */
export async function loadOrCreateSecretsMaterial(dir: string): Promise<SecretsMaterial> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const at = (name: string) => join(dir, name);
  const keyBase64 = await readFile(at(MATERIAL_FILES.key), "utf8").catch(async () => {
    const made = randomBytes(32).toString("base64");
    await writeFile(at(MATERIAL_FILES.key), `${made}\n`, { mode: 0o600, flag: "wx" });
    return made;
  });
  const ca = await readDeploymentCa(at(MATERIAL_FILES.caCert), at(MATERIAL_FILES.caKey)).catch(
    async () => {
      const made = await generateDeploymentCa();
      await writeFile(at(MATERIAL_FILES.caKey), made.keyPem, { mode: 0o600 });
      await writeFile(at(MATERIAL_FILES.caCert), made.certPem, { mode: 0o644 });
      return made;
    },
  );
  return { keyBase64: keyBase64.trim(), ca };
}

/**
 * A node's brokering settings from its env (WORKCELL_SECRETS_KEY and/or _KMS_KEY_ID, _CA_CERT,
 * WORKCELL_SECRETS_CA_KEY) and the Runtime Assets' bundle; undefined (logged: why) when
 * any part is missing: runs then get no placeholders and every CONNECT stays a tunnel.
 */
export async function nodeSecretsFromEnv(
  env: SecretKeysEnv & {
    WORKCELL_SECRETS_CA_CERT?: string | undefined;
    WORKCELL_SECRETS_CA_KEY?: string | undefined;
    RUNTIME_ASSETS_DIR: string;
  },
  logger: Logger,
): Promise<NodeSecretsConfig | undefined> {
  const keys = secretKeysFromEnv(env);
  if (
    keys === undefined ||
    env.WORKCELL_SECRETS_CA_CERT === undefined ||
    env.WORKCELL_SECRETS_CA_KEY === undefined
  ) {
    logger.info(
      "secrets are not brokered on this node: WORKCELL_SECRETS_KEY or WORKCELL_SECRETS_KMS_KEY_ID, and WORKCELL_SECRETS_CA_CERT and WORKCELL_SECRETS_CA_KEY are needed",
    );
    return undefined;
  }
  try {
    const ca = await readDeploymentCa(env.WORKCELL_SECRETS_CA_CERT, env.WORKCELL_SECRETS_CA_KEY);
    const runtimeBundle = await readFile(
      join(env.RUNTIME_ASSETS_DIR, RUNTIME_CA_BUNDLE),
      "utf8",
    ).catch(() => "");
    return { keys, ca, runtimeBundle };
  } catch (error) {
    logger.error(
      { err: error },
      "secrets are not brokered on this node: the CA files could not be read",
    );
    return undefined;
  }
}
