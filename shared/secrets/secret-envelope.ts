import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { z } from "zod";

/**
 * The deployment's key-encryption key (decisions 0131, 0164): seals and opens the
 * per-secret data keys. The environment implementation holds a 32-byte key in memory; the
 * AWS KMS one (kms-key-wrapper.ts) calls Encrypt/Decrypt with the context as encryption
 * context: only this interface is used, so the rest does not change.
 */
export type KeyWrapper = {
  /** Names the key that sealed a row (`env:<hash>`, `kms:<key id>`): rows name the key they need. */
  readonly keyId: string;
  wrap(dataKey: Buffer, context: string, signal?: AbortSignal): Promise<string>;
  unwrap(wrapped: string, context: string, signal?: AbortSignal): Promise<Buffer>;
  /**
   * Keys that only open rows sealed before a switch of provider (decision 0166): a store
   * sealed partly by the env key and partly by KMS keeps opening; new values are sealed by
   * this wrapper only.
   */
  readonly openers?: readonly KeyWrapper[];
};

export type SealedSecret = {
  readonly keyId: string;
  readonly wrappedKey: string;
  readonly ciphertext: string;
};

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM of `plain` under `key` with `context` as associated data: iv | tag | ciphertext. */
function seal(key: Buffer, plain: Buffer, context: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(context, "utf8"));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
}

function open(key: Buffer, sealed: string, context: string): Buffer {
  const bytes = Buffer.from(sealed, "base64");
  const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(context, "utf8"));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
}

/** A key wrapper over a 32-byte key held in memory (WORKCELL_SECRETS_KEY, or local mode's file). */
export function createEnvKeyWrapper(key: Buffer): KeyWrapper {
  if (key.length !== 32) throw new Error("the secrets key must be 32 bytes (base64 of 32 bytes)");
  const own = Buffer.from(key);
  return {
    keyId: `env:${createHash("sha256").update(own).digest("hex").slice(0, 16)}`,
    wrap: async (dataKey, context) => seal(own, dataKey, context),
    unwrap: async (wrapped, context) => open(own, wrapped, context),
  };
}

/** `<uid>/<name>`: what every sealed part is bound to. */
export function secretContext(uid: string, name: string): string {
  return `${uid}/${name}`;
}

/** Envelope encryption: a fresh data key per value, sealed by the deployment's key. */
export async function sealSecret(
  wrapper: KeyWrapper,
  value: string,
  context: string,
): Promise<SealedSecret> {
  const dataKey = randomBytes(32);
  try {
    return {
      keyId: wrapper.keyId,
      wrappedKey: await wrapper.wrap(dataKey, context),
      ciphertext: seal(dataKey, Buffer.from(value, "utf8"), context),
    };
  } finally {
    dataKey.fill(0);
  }
}

/** The value of a sealed secret; throws (without any part of it) when it does not open. */
export async function openSecret(
  wrapper: KeyWrapper,
  sealed: SealedSecret,
  context: string,
  signal?: AbortSignal,
): Promise<string> {
  const opener = [wrapper, ...(wrapper.openers ?? [])].find((key) => key.keyId === sealed.keyId);
  if (opener === undefined) throw new Error(`sealed by another key (${sealed.keyId})`);
  const dataKey = await opener.unwrap(sealed.wrappedKey, context, signal);
  try {
    return open(dataKey, sealed.ciphertext, context).toString("utf8");
  } finally {
    dataKey.fill(0);
  }
}

/** The deployment's wrapper from WORKCELL_SECRETS_KEY (base64 of 32 bytes); undefined when unset. */
export function keyWrapperFromEnv(value: string | undefined): KeyWrapper | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  return createEnvKeyWrapper(Buffer.from(value.trim(), "base64"));
}

/** The env variable holding the deployment's secrets key (API and agent-hosts: the same value). */
export function secretsKeyVar() {
  return z
    .string()
    .optional()
    .refine(
      (text) =>
        text === undefined ||
        text.trim() === "" ||
        Buffer.from(text.trim(), "base64").length === 32,
      "must be base64 of 32 random bytes (openssl rand -base64 32)",
    )
    .describe(
      "The deployment's secrets key, base64 of 32 bytes (openssl rand -base64 32), the same on the API and every agent-host; it seals the data keys of users' secrets (envelope encryption). With WORKCELL_SECRETS_KMS_KEY_ID it only opens the rows it sealed before. Neither set: PUT /v1/secrets answers 503 and the proxy swaps nothing.",
    );
}
