import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Logger } from "pino";
import type { Sql } from "postgres";
import { type AwsCredentials, createAwsClients } from "../../shared/aws/create-aws-clients.ts";
import { createDb } from "../../shared/db/client.ts";
import type { FunctionsEnv } from "../../shared/env/functions-env.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { defaultPolicyFromEnv } from "../../shared/network/network-policy.ts";
import type { KeyWrapper } from "../../shared/secrets/secret-envelope.ts";
import { secretKeysFromEnv } from "../../shared/secrets/secret-keys-from-env.ts";
import type { Tracing } from "../../shared/telemetry/tracing.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppLimits } from "../app-limits.ts";
import { createAttachmentDeps } from "../attachments/create-attachment-deps.ts";
import type { TokenVerifier } from "../auth/token-verifier.ts";
import { createCapabilityMinter } from "../capability/create-capability-minter.ts";
import { createHttpDataPlaneClient } from "../data-plane/http-data-plane-client.ts";
import { createHealthProbes } from "../health/health-probes.ts";
import { createBatchingRunQueue } from "../queue/batching-run-queue.ts";
import type { RunQueue } from "../queue/run-queue.ts";
import type { SqsBatchSend } from "../queue/sqs-batch-send.ts";
import { createSqsRunQueue } from "../queue/sqs-run-queue.ts";
import { createEventTickets } from "../run-events/event-tickets.ts";
import type { RunEventWaiter } from "../run-events/run-event-waiter.ts";
import { createSkillsDeps } from "../skills/create-skills-deps.ts";
import { createHttpSkillsDataPlane } from "../skills/http-skills-data-plane.ts";
import { personalTokenKeyFrom } from "../tokens/personal-token-secret.ts";

export type RuntimeDepsOptions = {
  /**
   * Long-lived runtimes (the Node entry) micro-batch run dispatches (batching-run-queue.ts);
   * Lambda and Workers serve one request per instance, so they send each run on its own.
   */
  dispatchBatchLingerMs?: number;
  /**
   * How run dispatch batches reach SQS when not through this thread's client: the Node
   * entry's sender thread (off-thread-sqs-sender.ts). Lambda and Workers leave it unset.
   */
  sendBatch?: SqsBatchSend;
  env: FunctionsEnv;
  /** A postgres.js client; its lifetime is the entry's business (process, or request on Workers). */
  sql: Sql;
  logger: Logger;
  /** Made once per process or isolate (it caches the issuer's keys). */
  auth: TokenVerifier;
  runEvents: RunEventWaiter;
  awsCredentials?: AwsCredentials;
  limits?: Partial<AppLimits>;
  /** From OTEL_* at the entry (startTracing); default off. */
  tracing?: Tracing;
  /** The process's series (Node entry) or the invocation's (Lambda, Workers). */
  metrics?: WorkcellMetrics;
  /** After each request (Lambda, Workers): log the metrics (createMetricsLogFlusher). */
  exportMetrics?: () => Promise<void>;
  /** After each request's span (Lambda): export the buffered spans (StartedTracing.flush). */
  flushTraces?: () => Promise<void>;
};

/** AppDeps of a cloud runtime (Node server, Lambda, Workers) from its parsed environment. */
export function createRuntimeDeps(o: RuntimeDepsOptions): AppDeps {
  const db = createDb(o.sql);
  const { sqs, s3 } = createAwsClients(o.env, o.awsCredentials);
  const capabilities = createCapabilityMinter({ privateJwk: o.env.CAPABILITY_PRIVATE_KEY });
  return {
    logger: o.logger,
    db,
    auth: o.auth,
    health: createHealthProbes({
      db,
      sqs,
      runQueueUrl: o.env.RUN_QUEUE_URL,
      s3,
      attachmentsBucket: o.env.ATTACHMENTS_BUCKET,
      nodeTtlMs: o.env.NODE_TTL_SECONDS * 1000,
    }),
    runQueue: runQueueFor(o, sqs),
    nodeTtlMs: o.env.NODE_TTL_SECONDS * 1000,
    dataPlane: createHttpDataPlaneClient({ baseUrl: o.env.DATA_PLANE_URL, capabilities }),
    capabilities,
    dataPlaneUrl: o.env.DATA_PLANE_URL,
    ...(o.env.DATA_PLANE_ROUTING === "nodes"
      ? { dataPlaneRouting: { nodeTtlMs: o.env.NODE_TTL_SECONDS * 1000 } }
      : {}),
    runEvents: o.runEvents,
    networkDefault: defaultPolicyFromEnv(o.env.WORKCELL_NETWORK_DEFAULT_ALLOW),
    ...secretKeysOf(o.env, o.awsCredentials),
    eventTickets: createEventTickets({ privateJwk: o.env.CAPABILITY_PRIVATE_KEY }),
    personalTokenKey: personalTokenKeyFrom(o.env.CAPABILITY_PRIVATE_KEY),
    ...(o.env.WORKCELL_CORS_ORIGINS === undefined
      ? {}
      : { corsOrigins: o.env.WORKCELL_CORS_ORIGINS }),
    ...createSkillsDeps({
      s3,
      bucket: o.env.ATTACHMENTS_BUCKET,
      sqs,
      queueUrl: o.env.RUN_QUEUE_URL,
      skillsDataPlane: createHttpSkillsDataPlane({ baseUrl: o.env.DATA_PLANE_URL, capabilities }),
    }),
    attachments: createAttachmentDeps({
      s3,
      bucket: o.env.ATTACHMENTS_BUCKET,
      dataPlaneUrl: o.env.DATA_PLANE_URL,
      capabilities,
    }),
    ...(o.limits === undefined ? {} : { limits: o.limits }),
    ...(o.tracing === undefined ? {} : { tracing: o.tracing }),
    ...(o.metrics === undefined ? {} : { metrics: o.metrics }),
    ...(o.exportMetrics === undefined ? {} : { exportMetrics: o.exportMetrics }),
    ...(o.flushTraces === undefined ? {} : { flushTraces: o.flushTraces }),
  };
}

function secretKeysOf(
  env: RuntimeDepsOptions["env"],
  credentials: AwsCredentials | undefined,
): { secretKeys?: KeyWrapper } {
  const secretKeys = secretKeysFromEnv(env, credentials);
  return secretKeys === undefined ? {} : { secretKeys };
}

function runQueueFor(o: RuntimeDepsOptions, sqs: SQSClient): RunQueue {
  const queue = createSqsRunQueue({
    sqs,
    queueUrl: o.env.RUN_QUEUE_URL,
    ...(o.tracing === undefined ? {} : { tracing: o.tracing }),
    ...(o.metrics === undefined ? {} : { metrics: o.metrics }),
    ...(o.sendBatch === undefined ? {} : { sendBatch: o.sendBatch }),
  });
  return o.dispatchBatchLingerMs === undefined
    ? queue
    : createBatchingRunQueue(queue, { lingerMs: o.dispatchBatchLingerMs });
}
