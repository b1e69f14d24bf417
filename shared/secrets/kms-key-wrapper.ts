import { DecryptCommand, EncryptCommand, type KMSClient } from "@aws-sdk/client-kms";
import { domainError } from "../errors/domain-errors.ts";
import type { KeyWrapper } from "./secret-envelope.ts";

/** One KMS call's deadline: a seal is part of a PUT, an open part of a proxied request. */
export const DEFAULT_KMS_CALL_TIMEOUT_MS = 5_000;

/**
 * The encryption context's key. KMS binds the ciphertext to it (Decrypt with another
 * context fails), as AES-GCM's associated data binds the env key's; CloudTrail records
 * it in clear, which is why it holds `<uid>/<name>` and never anything of the value.
 */
export const KMS_CONTEXT_KEY = "workcell:secret";

/** Answers that need the operator (a policy, a key's state), not a retry. */
const REFUSALS = new Set([
  "AccessDeniedException",
  "NotFoundException",
  "DisabledException",
  "KMSInvalidStateException",
  "KeyUnavailableException",
  "InvalidKeyUsageException",
  "UnrecognizedClientException",
  "InvalidSignatureException",
  "ExpiredTokenException",
  "IncompleteSignature",
  // No credentials at all (no role, no env): configuration, not a passing fault.
  "CredentialsProviderError",
]);

/** Answers that mean "this ciphertext does not open here": the row is refused, like a GCM failure. */
const NOT_OPENING = new Set(["InvalidCiphertextException", "IncorrectKeyException"]);

export type KmsKeyWrapperOptions = {
  readonly client: KMSClient;
  /** Key id, key ARN, alias name or alias ARN, as KMS takes it. */
  readonly keyId: string;
  readonly callTimeoutMs?: number;
};

type Action = "seal" | "open";

/** The AWS error name, or the socket's code (ECONNREFUSED) when the call never got an answer. */
function nameOf(error: unknown): string {
  if (!(error instanceof Error)) return "Error";
  const code = (error as { code?: unknown }).code;
  return error.name === "Error" && typeof code === "string" ? code : error.name;
}

/** What a failed call tells the caller: never the SDK's request (it holds the data key). */
function kmsFailure(error: unknown, action: Action, timeoutMs: number): Error {
  const name = nameOf(error);
  const outcome =
    action === "seal"
      ? "Nothing was stored."
      : "The secret was not sent (the request was refused).";
  if (NOT_OPENING.has(name)) {
    return new Error(
      `AWS KMS did not open this secret's data key (${name}): sealed for another context or key`,
    );
  }
  if (REFUSALS.has(name)) {
    return domainError("secrets_key_refused", {
      message: `AWS KMS refused the deployment's secrets key (${name}): the operator must let this role use the key (kms:Encrypt, kms:Decrypt) and keep it enabled. ${outcome}`,
      details: { kms_error: name },
    });
  }
  const why =
    name === "TimeoutError" || name === "AbortError" ? `no answer within ${timeoutMs} ms` : name;
  return domainError("secrets_key_unreachable", {
    message: `AWS KMS could not be reached (${why}). ${outcome} Retry; if it persists, check the network path to KMS.`,
    details: { kms_error: name },
  });
}

/**
 * The deployment key in AWS KMS (decision 0164): the data key is sealed with Encrypt and
 * opened with Decrypt, both bound to `<uid>/<name>` as encryption context and bounded by
 * a deadline (and the caller's signal). The key material never leaves KMS; the plaintext
 * data key is never logged (the client has no logger) and its copy is zeroed.
 */
export function createKmsKeyWrapper(options: KmsKeyWrapperOptions): KeyWrapper {
  const timeoutMs = options.callTimeoutMs ?? DEFAULT_KMS_CALL_TIMEOUT_MS;
  const bounded = (signal: AbortSignal | undefined) =>
    signal === undefined
      ? AbortSignal.timeout(timeoutMs)
      : AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
  async function call<T>(
    action: Action,
    signal: AbortSignal | undefined,
    run: (s: AbortSignal) => Promise<T>,
  ) {
    try {
      return await run(bounded(signal));
    } catch (error) {
      throw kmsFailure(error, action, timeoutMs);
    }
  }
  const contextOf = (context: string) => ({ [KMS_CONTEXT_KEY]: context });
  return {
    keyId: `kms:${options.keyId}`,
    wrap: (dataKey, context, signal) =>
      call("seal", signal, async (abortSignal) => {
        const out = await options.client.send(
          new EncryptCommand({
            KeyId: options.keyId,
            Plaintext: dataKey,
            EncryptionContext: contextOf(context),
          }),
          { abortSignal },
        );
        if (out.CiphertextBlob === undefined) throw new Error("KMS Encrypt answered no ciphertext");
        return Buffer.from(out.CiphertextBlob).toString("base64");
      }),
    unwrap: (wrapped, context, signal) =>
      call("open", signal, async (abortSignal) => {
        const out = await options.client.send(
          new DecryptCommand({
            KeyId: options.keyId,
            CiphertextBlob: Buffer.from(wrapped, "base64"),
            EncryptionContext: contextOf(context),
          }),
          { abortSignal },
        );
        if (out.Plaintext === undefined) throw new Error("KMS Decrypt answered no plaintext");
        const dataKey = Buffer.from(out.Plaintext);
        out.Plaintext.fill(0);
        return dataKey;
      }),
  };
}
