import type { ClusterDeps, Input } from "./cluster-deps.ts";
import { SECRETS_KEY_ACTIONS } from "./secrets-key.ts";

export type NodeRoleArgs = {
  runQueueArn: Input<string>;
  runDlqArn: Input<string>;
  attachmentsBucketArn: Input<string>;
  /** The one release object the nodes install (its ARN names the checksum). */
  releaseObjectArn: Input<string>;
  envParameterArn: Input<string>;
  /** The deployment's secrets key (KMS) and the two parameters of its CA (decision 0164). */
  secretsKeyArn: Input<string>;
  secretsCaCertParameterArn: Input<string>;
  secretsCaKeyParameterArn: Input<string>;
};

/**
 * What a node's code calls, and nothing more (grep of agent-host/ and shared/: the SDK
 * commands each statement is for). The SecureString parameter uses the account's
 * aws/ssm key, whose key policy lets SSM decrypt for callers allowed ssm:GetParameter,
 * so no kms statement is needed.
 */
export const NODE_QUEUE_ACTIONS = [
  "sqs:ReceiveMessage", // agent-host/runs/queue/sqs-work-queue.ts: the worker's receive
  "sqs:DeleteMessage", // a handled message
  "sqs:ChangeMessageVisibility", // a message handed back (visibility 0)
  "sqs:GetQueueAttributes", // /readyz (node-readiness.ts) and doctor's queue check
  "sqs:SendMessage", // a poison message into the DLQ, a delayed re-send
] as const;

export function nodeRolePolicy(args: {
  runQueueArn: string;
  runDlqArn: string;
  attachmentsBucketArn: string;
  releaseObjectArn: string;
  envParameterArn: string;
  secretsKeyArn: string;
  secretsCaCertParameterArn: string;
  secretsCaKeyParameterArn: string;
}) {
  return {
    Version: "2012-10-17",
    Statement: [
      {
        Sid: "RunQueues",
        Effect: "Allow",
        Action: [...NODE_QUEUE_ACTIONS],
        Resource: [args.runQueueArn, args.runDlqArn],
      },
      {
        // Attachment import: GetObject (HeadObject is authorised by it too).
        Sid: "AttachmentObjects",
        Effect: "Allow",
        Action: ["s3:GetObject"],
        Resource: [`${args.attachmentsBucketArn}/*`],
      },
      {
        // doctor's HeadBucket; and without it S3 answers a missing key with 403, not 404.
        Sid: "AttachmentListing",
        Effect: "Allow",
        Action: ["s3:ListBucket"],
        Resource: [args.attachmentsBucketArn],
      },
      {
        Sid: "Release",
        Effect: "Allow",
        Action: ["s3:GetObject"],
        Resource: [args.releaseObjectArn],
      },
      {
        Sid: "EnvFile",
        Effect: "Allow",
        Action: ["ssm:GetParameter"],
        Resource: [args.envParameterArn],
      },
      {
        // Opening a user's secret when a request to a bound host needs it (never sealing).
        Sid: "SecretsKey",
        Effect: "Allow",
        Action: [...SECRETS_KEY_ACTIONS.nodes],
        Resource: [args.secretsKeyArn],
      },
      {
        // The deployment CA, written to /etc/workcell/secrets/ at first boot.
        Sid: "SecretsCa",
        Effect: "Allow",
        Action: ["ssm:GetParameter"],
        Resource: [args.secretsCaCertParameterArn, args.secretsCaKeyParameterArn],
      },
    ],
  };
}

/** The nodes' instance role (EC2 only), its one inline policy and the instance profile. */
export function nodeRole(d: ClusterDeps, args: NodeRoleArgs) {
  const role = new d.aws.iam.Role("NodeRole", {
    description: "Workcell agent-host nodes",
    assumeRolePolicy: JSON.stringify({
      Version: "2012-10-17",
      Statement: [
        {
          Effect: "Allow",
          Principal: { Service: "ec2.amazonaws.com" },
          Action: "sts:AssumeRole",
        },
      ],
    }),
  });
  new d.aws.iam.RolePolicy("NodeRolePolicy", {
    role: role.name,
    policy: d.pulumi.output(args).apply((arns) => JSON.stringify(nodeRolePolicy(arns))),
  });
  const profile = new d.aws.iam.InstanceProfile("NodeProfile", { role: role.name });
  return { role, profile };
}
