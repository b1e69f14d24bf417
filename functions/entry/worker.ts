// Cloudflare Workers (infra/wrangler.toml): `fetch` serves the API, `scheduled` (a Cron
// Trigger) runs the run sweep (expired leases, then lost dispatches). Needs
// `nodejs_compat` (postgres.js over TCP, the AWS SDK); no node:fs anywhere in the bundle.
// Traced from OTEL_* bindings like the other entries (off by default; docs/decisions/0078).
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
import { otlpExporterConfigOf } from "../../shared/telemetry/otlp-exporter-config.ts";
import { type StartedTracing, startTracing } from "../../shared/telemetry/start-tracing.ts";
import type { Tracing } from "../../shared/telemetry/tracing.ts";
import { tracingEnvSchema } from "../../shared/telemetry/tracing-env.ts";
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
      tracingEnv: parseEnv(tracingEnvSchema, bindings),
    };
  };
  /**
   * One tracer provider per invocation, like the database connection: an isolate may not
   * do I/O outside a request, so spans cannot wait in a batch for a later one. The bundle
   * holds the exporter's browser build (fetch), which reads no environment: its settings
   * come from the bindings. Off (the default): the no-op tracer, the SDK never loaded.
   */
  const startInvocationTracing = (tracingEnv: ReturnType<typeof setup>["tracingEnv"]) =>
    startTracing(tracingEnv, "workcell-functions", {
      explicit: { otlp: otlpExporterConfigOf(tracingEnv) },
    });

  return {
    async fetch(request: Request, bindings: EnvRecord, ctx: ExecutionContext): Promise<Response> {
      const { env, credentials, verifier, logger, tracingEnv } = setup(bindings);
      const tracing = await startInvocationTracing(tracingEnv);
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
          tracing: tracing.tracing,
          auth: verifier,
          awsCredentials: credentials,
          runEvents: createPollingRunEventWaiter(),
        }),
      );
      const served = whenResponseDone(await app.fetch(request), () => sql.end({ timeout: 5 }));
      ctx.waitUntil(served.done);
      // Exported once the body was sent (the request's span ended at its headers, an event
      // stream's too): begun earlier, the export's serialization shares the isolate's thread
      // with the answer and delayed it (decision 0078). waitUntil keeps the isolate for it.
      ctx.waitUntil(
        served.done.catch(() => {}).then(() => exportSpans(tracing, logger, "request")),
      );
      return served.response;
    },

    async scheduled(
      _controller: unknown,
      bindings: EnvRecord,
      ctx: ExecutionContext,
    ): Promise<void> {
      const { env, credentials, logger, tracingEnv } = setup(bindings);
      ctx.waitUntil(
        startInvocationTracing(tracingEnv).then((tracing) =>
          sweep(env, credentials, logger, tracing.tracing).finally(() =>
            exportSpans(tracing, logger, "sweep"),
          ),
        ),
      );
    },
  };
}

/** Exports and stops the invocation's provider; a failed export is a warning, never a failure. */
async function exportSpans(
  tracing: StartedTracing,
  logger: pino.Logger,
  what: "request" | "sweep",
): Promise<void> {
  if (!tracing.enabled) return;
  await tracing
    .shutdown()
    .catch((error: unknown) => logger.warn({ err: error }, `could not export the ${what}'s spans`));
}

async function sweep(
  env: FunctionsEnv,
  credentials: { accessKeyId: string; secretAccessKey: string },
  logger: pino.Logger,
  tracing: Tracing,
): Promise<void> {
  const sql = postgres(env.DATABASE_URL, POSTGRES_OPTIONS);
  const metrics = createWorkcellMetrics(new Registry());
  try {
    const runQueue = createSqsRunQueue({
      sqs: createAwsClients(env, credentials).sqs,
      queueUrl: env.RUN_QUEUE_URL,
      metrics,
      tracing,
    });
    // A re-sent run's publish span continues the trace stored with the run (0054, 0069).
    await sweepRuns(
      {
        db: createDb(sql),
        runQueue,
        logger,
        nodeTtlMs: env.NODE_TTL_SECONDS * 1000,
        // No memory between invocations: a restart's grace from the server's start (0168).
        sinceDatabaseStart: true,
        metrics,
        tracing,
      },
      AbortSignal.timeout(SWEEP_BUDGET_MS),
    );
  } finally {
    await createMetricsLogFlusher(metrics, logger)();
    await sql.end({ timeout: 5 });
  }
}
