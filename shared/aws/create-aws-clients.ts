import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";

/** Region when none is configured (fauxqs ignores it; AWS runtimes always set one). */
export const FALLBACK_AWS_REGION = "us-east-1";

export type AwsCredentials = {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
};

/** The AWS settings every deployable's env shares (functions/, agent-host/). */
export type AwsEnv = { AWS_REGION?: string | undefined; AWS_ENDPOINT_URL?: string | undefined };

/**
 * The SQS and S3 clients of one deployable. Credentials come from the runtime's default
 * chain (Lambda role, env) unless given: Workers have no such chain, so their entry
 * passes them from its bindings.
 */
export function createAwsClients(
  env: AwsEnv,
  credentials?: AwsCredentials,
): { sqs: SQSClient; s3: S3Client } {
  const common = {
    region: env.AWS_REGION ?? FALLBACK_AWS_REGION,
    ...(env.AWS_ENDPOINT_URL === undefined ? {} : { endpoint: env.AWS_ENDPOINT_URL }),
    ...(credentials === undefined ? {} : { credentials }),
  };
  return {
    sqs: new SQSClient(common),
    // Path-style only for emulators: on AWS, virtual-hosted style is the default and required
    // for newer regions.
    s3: new S3Client({ ...common, forcePathStyle: env.AWS_ENDPOINT_URL !== undefined }),
  };
}
