import { KMSClient } from "@aws-sdk/client-kms";
import { type AwsCredentials, awsClientConfig } from "../aws/create-aws-clients.ts";
import { createKmsKeyWrapper, DEFAULT_KMS_CALL_TIMEOUT_MS } from "./kms-key-wrapper.ts";
import { type KeyWrapper, keyWrapperFromEnv } from "./secret-envelope.ts";

/** The env of the deployment key's choice (API and agent-hosts: the same values). */
export type SecretKeysEnv = {
  WORKCELL_SECRETS_KEY?: string | undefined;
  WORKCELL_SECRETS_KMS_KEY_ID?: string | undefined;
  WORKCELL_SECRETS_KMS_ENDPOINT?: string | undefined;
  AWS_REGION?: string | undefined;
};

/**
 * The deployment's secrets key (decisions 0131, 0164, 0166): with
 * WORKCELL_SECRETS_KMS_KEY_ID, AWS KMS seals every new value and the env key (if set)
 * still opens the rows it sealed; otherwise the env key alone; neither: undefined (PUT
 * answers 503, nodes broker nothing).
 */
export function secretKeysFromEnv(
  env: SecretKeysEnv,
  credentials?: AwsCredentials,
): KeyWrapper | undefined {
  const envKey = keyWrapperFromEnv(env.WORKCELL_SECRETS_KEY);
  const kmsKeyId = env.WORKCELL_SECRETS_KMS_KEY_ID?.trim();
  if (kmsKeyId === undefined || kmsKeyId === "") return envKey;
  // Two attempts inside the call's deadline: a refused connection or a throttle gets one
  // retry, a hung endpoint is cut by the deadline.
  const common = awsClientConfig(
    { AWS_REGION: env.AWS_REGION, AWS_ENDPOINT_URL: env.WORKCELL_SECRETS_KMS_ENDPOINT },
    credentials,
    {
      connectionMs: 2_000,
      requestMs: DEFAULT_KMS_CALL_TIMEOUT_MS,
      socketIdleMs: DEFAULT_KMS_CALL_TIMEOUT_MS,
    },
  );
  const kms = createKmsKeyWrapper({
    client: new KMSClient({ ...common, maxAttempts: 2 }),
    keyId: kmsKeyId,
  });
  return envKey === undefined ? kms : { ...kms, openers: [envKey] };
}
