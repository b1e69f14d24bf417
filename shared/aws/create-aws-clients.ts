import { S3Client } from "@aws-sdk/client-s3";
import { SQSClient } from "@aws-sdk/client-sqs";

/** Region when none is configured (fauxqs ignores it; AWS runtimes always set one). */
export const FALLBACK_AWS_REGION = "us-east-1";

export type AwsCredentials = {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
};

/**
 * Bounds of every SQS and S3 call. The SDK's defaults wait for ever (no connection,
 * request or socket timeout), so a hung endpoint would hang a confirm, a skill import
 * or a queue send past any signal its caller forgot. The request and socket bounds must
 * both exceed the longest SQS long poll (20 s, WaitTimeSeconds' maximum: the socket is
 * silent while SQS waits); the socket bound is the longest silence while a body
 * streams, so a large download is never cut for its size.
 */
export type AwsTimeouts = {
  /** Until the TCP connection is up. */
  connectionMs: number;
  /** Until the response headers arrive (a long poll's wait included). */
  requestMs: number;
  /** Longest silence of the socket, while sending or receiving a body. */
  socketIdleMs: number;
};

export const DEFAULT_AWS_TIMEOUTS: AwsTimeouts = Object.freeze({
  connectionMs: 5_000,
  requestMs: 30_000,
  socketIdleMs: 30_000,
});

/** The AWS settings every deployable's env shares (functions/, agent-host/). */
export type AwsEnv = { AWS_REGION?: string | undefined; AWS_ENDPOINT_URL?: string | undefined };

/** The settings every client of one deployable shares: region, endpoint, bounds, credentials. */
export function awsClientConfig(
  env: AwsEnv,
  credentials?: AwsCredentials,
  timeouts: AwsTimeouts = DEFAULT_AWS_TIMEOUTS,
) {
  return {
    region: env.AWS_REGION ?? FALLBACK_AWS_REGION,
    // Options, not a handler instance: each runtime builds its own (Node's http handler,
    // fetch on Workers) from them; throwOnRequestTimeout makes the request bound an error
    // (without it the Node handler only logs a warning).
    requestHandler: {
      connectionTimeout: timeouts.connectionMs,
      requestTimeout: timeouts.requestMs,
      socketTimeout: timeouts.socketIdleMs,
      throwOnRequestTimeout: true,
    },
    ...(env.AWS_ENDPOINT_URL === undefined ? {} : { endpoint: env.AWS_ENDPOINT_URL }),
    ...(credentials === undefined ? {} : { credentials }),
  };
}

/**
 * The SQS and S3 clients of one deployable. Credentials come from the runtime's default
 * chain (Lambda role, env) unless given: Workers have no such chain, so their entry
 * passes them from its bindings.
 */
export function createAwsClients(
  env: AwsEnv,
  credentials?: AwsCredentials,
  timeouts: AwsTimeouts = DEFAULT_AWS_TIMEOUTS,
): { sqs: SQSClient; s3: S3Client } {
  const common = awsClientConfig(env, credentials, timeouts);
  return {
    sqs: new SQSClient(common),
    // Path-style only for emulators: on AWS, virtual-hosted style is the default and required
    // for newer regions.
    s3: new S3Client({ ...common, forcePathStyle: env.AWS_ENDPOINT_URL !== undefined }),
  };
}
