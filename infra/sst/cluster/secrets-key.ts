import type { ClusterDeps } from "./cluster-deps.ts";

/**
 * What each side may do with the deployment's secrets key (decision 0164): the API only
 * seals (PUT /v1/secrets), the nodes only open (at the moment a request to a bound host
 * needs the value). So a leaked API role cannot read the database's secrets, and a node
 * cannot seal anything a user would take for theirs.
 */
export const SECRETS_KEY_ACTIONS = {
  api: ["kms:Encrypt"],
  nodes: ["kms:Decrypt"],
} as const;

/**
 * The deployment's secrets key in AWS KMS: symmetric, its material rotated yearly by KMS
 * (the ARN stays, rows sealed before a rotation keep opening), 30 days to cancel a deletion.
 * The default key policy lets the account's IAM policies grant it, which is how the API's
 * and the nodes' roles get exactly SECRETS_KEY_ACTIONS.
 */
export function secretsKey(d: ClusterDeps, args: { aliasName: string }) {
  const key = new d.aws.kms.Key("SecretsKey", {
    description: "Workcell: seals the data keys of users' secrets (docs/decisions/0164)",
    keyUsage: "ENCRYPT_DECRYPT",
    customerMasterKeySpec: "SYMMETRIC_DEFAULT",
    enableKeyRotation: true,
    deletionWindowInDays: 30,
  });
  const alias = new d.aws.kms.Alias("SecretsKeyAlias", {
    name: args.aliasName,
    targetKeyId: key.arn,
  });
  return { key, alias };
}
