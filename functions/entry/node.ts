// The control plane as a Node HTTP server (@hono/node-server): a self-hosted deployment
// or a container. `node functions/entry/node.ts`, configured by the functions env
// (shared/env/functions-env.ts) plus PORT / HOST / SWEEP_INTERVAL_MS below.
import { serve } from "@hono/node-server";
import pino from "pino";
import postgres from "postgres";
import { z } from "zod";
import { guardDatabaseDriverFaults } from "../../shared/db/driver-fault-guard.ts";
import {
  stallBoundMs,
  stalledConnectionOptions,
} from "../../shared/db/stalled-connection-watchdog.ts";
import { intVar, portVar } from "../../shared/env/env-vars.ts";
import { functionsEnvSchema } from "../../shared/env/functions-env.ts";
import { metricsEnvShape } from "../../shared/env/metrics-env.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";
import { postgresListen } from "../../shared/listen/postgres-listen.ts";
import { loggerOptions } from "../../shared/logging/safe-error-serializer.ts";
import { createProcessMetrics, serveProcessMetrics } from "../../shared/metrics/process-metrics.ts";
import { onStopSignals } from "../../shared/process/bounded-shutdown.ts";
import { startTracing } from "../../shared/telemetry/start-tracing.ts";
import { tracingEnvSchema } from "../../shared/telemetry/tracing-env.ts";
import { createApp } from "../app.ts";
import { createTokenVerifier } from "../auth/create-token-verifier.ts";
import { DEFAULT_BATCH_LINGER_MS } from "../queue/batching-run-queue.ts";
import { createOffThreadSqsSender } from "../queue/off-thread-sqs-sender.ts";
import { createNotifyRunEventWaiter } from "../run-events/notify-run-event-waiter.ts";
import { runSweeperLoop } from "../runs/sweeper-loop.ts";
import { createRuntimeDeps } from "../wiring/runtime-deps.ts";

/** Connections per process; Postgres' max_connections is shared by every replica. */
const DB_POOL_MAX = 10;

const nodeEnvSchema = z.object({
  PORT: portVar().default(8080).describe("TCP port to listen on (default 8080)."),
  HOST: z.string().min(1).default("0.0.0.0").describe("Address to bind (default 0.0.0.0)."),
  SWEEP_INTERVAL_MS: intVar(1_000, 3_600_000)
    .optional()
    .describe("Also run the dispatch sweeper in-process every this many ms (when no cron does)."),
  SHUTDOWN_TIMEOUT_SECONDS: intVar(1, 600)
    .default(30)
    .describe(
      "SIGTERM/SIGINT: the clean stop may take this long, then the process exits anyway, logging what it abandoned (default 30).",
    ),
  ...metricsEnvShape,
});

const env = parseEnv(functionsEnvSchema, process.env);
const nodeEnv = parseEnv(nodeEnvSchema, process.env);
const logger = pino(loggerOptions(env.LOG_LEVEL));
// One database connection's failure never ends the process (decision 0111).
guardDatabaseDriverFaults({ logger, exit: (code) => process.exit(code) });
const metrics = createProcessMetrics();
// Off unless OTEL_* asks for it; then the SDK is loaded and its provider passed in below.
const tracing = await startTracing(parseEnv(tracingEnvSchema, process.env), "workcell-functions");
const sql = postgres(env.DATABASE_URL, {
  max: DB_POOL_MAX,
  onnotice: () => {},
  connection: { statement_timeout: env.DB_STATEMENT_TIMEOUT_SECONDS * 1000 },
  // A connection silent past its statement_timeout is ended, freeing its slot (0167).
  ...stalledConnectionOptions({
    stallMs: stallBoundMs(env.DB_STATEMENT_TIMEOUT_SECONDS * 1000),
    onStalled: (err) => logger.warn({ err }, "ended a database connection that stopped answering"),
  }),
});
const runEvents = createNotifyRunEventWaiter({ listen: postgresListen(sql), logger });
// The SDK's work for run dispatches runs on its own thread, off the one serving requests.
const sqsSender = createOffThreadSqsSender({
  aws: { AWS_REGION: env.AWS_REGION, AWS_ENDPOINT_URL: env.AWS_ENDPOINT_URL },
});
const deps = createRuntimeDeps({
  env,
  sql,
  logger,
  auth: createTokenVerifier(env),
  runEvents,
  dispatchBatchLingerMs: DEFAULT_BATCH_LINGER_MS,
  sendBatch: sqsSender.send,
  tracing: tracing.tracing,
  metrics,
});
const server = serve({ fetch: createApp(deps).fetch, port: nodeEnv.PORT, hostname: nodeEnv.HOST });
logger.info({ port: nodeEnv.PORT, tracing: tracing.enabled }, "workcell functions listening");
const metricsServer = await serveProcessMetrics(metrics, {
  port: nodeEnv.METRICS_PORT,
  hostname: nodeEnv.METRICS_HOST,
  logger,
});

const stopping = new AbortController();
const sweeper =
  nodeEnv.SWEEP_INTERVAL_MS === undefined
    ? Promise.resolve()
    : runSweeperLoop(
        {
          db: deps.db,
          runQueue: deps.runQueue,
          logger,
          nodeTtlMs: env.NODE_TTL_SECONDS * 1000,
          metrics,
          tracing: tracing.tracing,
        },
        stopping.signal,
        nodeEnv.SWEEP_INTERVAL_MS,
      );

// SIGTERM / SIGINT end the process within SHUTDOWN_TIMEOUT_SECONDS whatever it waits on
// (a database that stopped answering holds server.close and the sweeper).
onStopSignals({
  logger,
  deadlineMs: nodeEnv.SHUTDOWN_TIMEOUT_SECONDS * 1000,
  steps: [
    {
      name: "http server",
      run: () => {
        stopping.abort();
        return new Promise<void>((done) => server.close(() => done()));
      },
    },
    { name: "sweeper", run: () => sweeper },
    // Every request has had its dispatch answered (server.close waited for them).
    { name: "sqs sender", run: () => sqsSender.close() },
    { name: "metrics server", run: async () => metricsServer?.close() },
    { name: "run events", run: () => runEvents.close() },
    { name: "database pool", run: () => sql.end({ timeout: 5 }) },
    // Spans still buffered are exported before the process goes.
    { name: "trace export", run: () => tracing.shutdown() },
  ],
});
