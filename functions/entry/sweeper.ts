// Scheduled Lambda (EventBridge rule, e.g. every minute): ends runs whose lease expired
// (node lost), then re-dispatches pending runs whose queue message was lost
// (functions/runs/sweep-runs.ts).
import pino from "pino";
import postgres from "postgres";
import { Registry } from "prom-client";
import { createAwsClients } from "../../shared/aws/create-aws-clients.ts";
import { createDb } from "../../shared/db/client.ts";
import { functionsEnvSchema } from "../../shared/env/functions-env.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";
import { loggerOptions } from "../../shared/logging/safe-error-serializer.ts";
import { createMetricsLogFlusher } from "../../shared/metrics/log-metrics.ts";
import { createWorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { startTracing } from "../../shared/telemetry/start-tracing.ts";
import { tracingEnvSchema } from "../../shared/telemetry/tracing-env.ts";
import { createSqsRunQueue } from "../queue/sqs-run-queue.ts";
import { sweepRuns } from "../runs/sweep-runs.ts";
import { SWEEP_BUDGET_MS } from "./lambda-timeouts.ts";

const env = parseEnv(functionsEnvSchema, process.env);
const logger = pino(loggerOptions(env.LOG_LEVEL));
const db = createDb(postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} }));
// Logged after each invocation, like the API's (docs/decisions/0031).
const metrics = createWorkcellMetrics(new Registry());
const flushMetrics = createMetricsLogFlusher(metrics, logger);
// OTEL_* as on the Lambda API entry (off by default): a re-sent run's publish span continues
// the trace stored with the run (docs/decisions/0054), and the spans are exported before the
// invocation returns, since the instance is frozen afterwards (docs/decisions/0069).
const tracing = await startTracing(parseEnv(tracingEnvSchema, process.env), "workcell-functions");
const runQueue = createSqsRunQueue({
  sqs: createAwsClients(env).sqs,
  queueUrl: env.RUN_QUEUE_URL,
  metrics,
  tracing: tracing.tracing,
});

/** After each invocation: metrics as a log line, then the spans (a failed export is logged). */
async function flushTelemetry(): Promise<void> {
  await flushMetrics();
  await tracing
    .flush()
    .catch((error: unknown) => logger.warn({ err: error }, "could not export the sweep's spans"));
}

/** Counts only: what one invocation did, for the function's logs and metrics. */
export type SweepSummary = { ran: boolean; sent: number; failed: number; nodeLost: number };

export async function handler(): Promise<SweepSummary> {
  const { lostNodes, nodeLost, dispatch } = await sweepRuns(
    {
      db,
      runQueue,
      logger,
      nodeTtlMs: env.NODE_TTL_SECONDS * 1000,
      // No memory between invocations: a restart's grace from the server's start (0168).
      sinceDatabaseStart: true,
      metrics,
      tracing: tracing.tracing,
    },
    AbortSignal.timeout(SWEEP_BUDGET_MS),
  ).finally(flushTelemetry);
  // `ran` is the dispatch step's (another sweeper held its lock); leases are always swept.
  const lost = [...lostNodes.scopes, ...nodeLost].reduce((n, s) => n + s.runIds.length, 0);
  return dispatch.ran
    ? { ran: true, sent: dispatch.sent.length, failed: dispatch.failed.length, nodeLost: lost }
    : { ran: false, sent: 0, failed: 0, nodeLost: lost };
}
