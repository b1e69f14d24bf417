// Cloudflare Workers (infra/wrangler.toml): `fetch` serves the API, `scheduled` (a Cron
// Trigger) runs the run sweep (expired leases, then lost dispatches). Needs
// `nodejs_compat` (postgres.js over TCP, the AWS SDK); no node:fs anywhere in the bundle.
import pino from "pino";
import postgres from "postgres";
import { Registry } from "prom-client";
import { z } from "zod";
import { createAwsClients } from "../../shared/aws/create-aws-clients.ts";
import { createDb } from "../../shared/db/client.ts";
import { type FunctionsEnv, functionsEnvSchema } from "../../shared/env/functions-env.ts";
import { type EnvRecord, parseEnv } from "../../shared/env/parse-env.ts";
import { loggerOptions } from "../../shared/logging/safe-error-serializer.ts";
import { createMetricsLogFlusher } from "../../shared/metrics/log-metrics.ts";
import { createWorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { createApp } from "../app.ts";
import { createTokenVerifier } from "../auth/create-token-verifier.ts";
import type { TokenVerifier } from "../auth/token-verifier.ts";
import { createSqsRunQueue } from "../queue/sqs-run-queue.ts";
import { createPollingRunEventWaiter } from "../run-events/run-event-waiter.ts";
import { sweepRuns } from "../runs/sweep-runs.ts";
import { createRuntimeDeps } from "../wiring/runtime-deps.ts";
import { whenResponseDone } from "./worker-stream.ts";

/** The parts of the Workers runtime API this entry uses. */
type ExecutionContext = { waitUntil(promise: Promise<unknown>): void };

/** Workers have no credential chain: the keys come from secrets (`wrangler secret put`). */
const workerAwsEnvSchema = z.object({
  AWS_ACCESS_KEY_ID: z.string().min(1).describe("Access key id for SQS and S3."),
  AWS_SECRET_ACCESS_KEY: z.string().min(1).describe("Secret access key for SQS and S3."),
});

/** A Cron Trigger invocation may run 30 s; one sweep stays well inside. */
const SWEEP_BUDGET_MS = 25_000;
/** Leave the connection little idle time: it cannot outlive the request anyway. */
const POSTGRES_OPTIONS = { max: 1, idle_timeout: 5, fetch_types: false, onnotice: () => {} };

export default createWorker();

function createWorker() {
  // Per isolate: the token verifier caches the issuer's keys across requests. It holds
  // no I/O object (jose drops in-flight fetches between requests on Workers).
  let auth: { env: EnvRecord; verifier: TokenVerifier } | undefined;
  const setup = (bindings: EnvRecord) => {
    const env = parseEnv(functionsEnvSchema, bindings);
    const aws = parseEnv(workerAwsEnvSchema, bindings);
    if (auth?.env !== bindings) auth = { env: bindings, verifier: createTokenVerifier(env) };
    const credentials = {
      accessKeyId: aws.AWS_ACCESS_KEY_ID,
      secretAccessKey: aws.AWS_SECRET_ACCESS_KEY,
    };
    return {
      env,
      credentials,
      verifier: auth.verifier,
      logger: pino(loggerOptions(env.LOG_LEVEL)),
    };
  };

  return {
    async fetch(request: Request, bindings: EnvRecord, ctx: ExecutionContext): Promise<Response> {
      const { env, credentials, verifier, logger } = setup(bindings);
      const sql = postgres(env.DATABASE_URL, POSTGRES_OPTIONS);
      // Nothing scrapes a Worker: this request's series are logged once it is answered
      // (docs/decisions/0031).
      const metrics = createWorkcellMetrics(new Registry());
      const app = createApp(
        createRuntimeDeps({
          env,
          sql,
          logger,
          metrics,
          exportMetrics: createMetricsLogFlusher(metrics, logger),
          auth: verifier,
          awsCredentials: credentials,
          runEvents: createPollingRunEventWaiter(),
        }),
      );
      const served = whenResponseDone(await app.fetch(request), () => sql.end({ timeout: 5 }));
      ctx.waitUntil(served.done);
      return served.response;
    },

    async scheduled(
      _controller: unknown,
      bindings: EnvRecord,
      ctx: ExecutionContext,
    ): Promise<void> {
      const { env, credentials, logger } = setup(bindings);
      ctx.waitUntil(sweep(env, credentials, logger));
    },
  };
}

async function sweep(
  env: FunctionsEnv,
  credentials: { accessKeyId: string; secretAccessKey: string },
  logger: pino.Logger,
): Promise<void> {
  const sql = postgres(env.DATABASE_URL, POSTGRES_OPTIONS);
  const metrics = createWorkcellMetrics(new Registry());
  try {
    const runQueue = createSqsRunQueue({
      sqs: createAwsClients(env, credentials).sqs,
      queueUrl: env.RUN_QUEUE_URL,
      metrics,
    });
    await sweepRuns(
      { db: createDb(sql), runQueue, logger, nodeTtlMs: env.NODE_TTL_SECONDS * 1000, metrics },
      AbortSignal.timeout(SWEEP_BUDGET_MS),
    );
  } finally {
    await createMetricsLogFlusher(metrics, logger)();
    await sql.end({ timeout: 5 });
  }
}
