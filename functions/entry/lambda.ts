// AWS Lambda: `handler`. Deployed (sst.config.ts) behind a Function URL whose invoke mode
// is RESPONSE_STREAM, so an event stream reaches the client event by event, as it is
// written, instead of all at once when the handler returns. WORKCELL_LAMBDA_RESPONSE_MODE=
// buffered is for API Gateway and `sst dev`, which cannot stream: there a stream ends after
// 20 s with what it has and the client resumes with Last-Event-ID.
// One request at a time per instance, so one database connection; the client lives as
// long as the instance (module scope is the instance's lifetime on Lambda).
import { handle, streamHandle } from "hono/aws-lambda";
import pino from "pino";
import postgres from "postgres";
import { Registry } from "prom-client";
import { z } from "zod";
import { functionsEnvSchema } from "../../shared/env/functions-env.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";
import { loggerOptions } from "../../shared/logging/safe-error-serializer.ts";
import { createMetricsLogFlusher } from "../../shared/metrics/log-metrics.ts";
import { createWorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { startTracing } from "../../shared/telemetry/start-tracing.ts";
import { tracingEnvSchema } from "../../shared/telemetry/tracing-env.ts";
import { createApp } from "../app.ts";
import { createTokenVerifier } from "../auth/create-token-verifier.ts";
import { createPollingRunEventWaiter } from "../run-events/run-event-waiter.ts";
import { createRuntimeDeps } from "../wiring/runtime-deps.ts";
import {
  LAMBDA_BUFFERED_EVENT_STREAM_MAX_MS,
  LAMBDA_EVENT_STREAM_MAX_MS,
} from "./lambda-timeouts.ts";

const lambdaEnvSchema = z.object({
  WORKCELL_LAMBDA_RESPONSE_MODE: z
    .enum(["stream", "buffered"])
    .default("stream")
    .describe(
      "`stream` (default): a Function URL with invoke mode RESPONSE_STREAM; `buffered`: API Gateway or `sst dev`.",
    ),
});

const env = parseEnv(functionsEnvSchema, process.env);
const { WORKCELL_LAMBDA_RESPONSE_MODE: mode } = parseEnv(lambdaEnvSchema, process.env);
const logger = pino(loggerOptions(env.LOG_LEVEL));
const sql = postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} });
// Nothing scrapes a Lambda: the instance's registry is logged (and reset) after each
// request, one invocation at a time (docs/decisions/0031).
const metrics = createWorkcellMetrics(new Registry());
// OTEL_* as on the Node entry (off by default). The instance is frozen once an invocation
// returns, so each request's spans are exported before it does (flushTraces); a collector
// next to the function (the OpenTelemetry Lambda layer's, on localhost) keeps that short.
const tracing = await startTracing(parseEnv(tracingEnvSchema, process.env), "workcell-functions");
const app = createApp(
  createRuntimeDeps({
    env,
    sql,
    logger,
    metrics,
    exportMetrics: createMetricsLogFlusher(metrics, logger),
    tracing: tracing.tracing,
    ...(tracing.enabled ? { flushTraces: () => tracing.flush() } : {}),
    auth: createTokenVerifier(env),
    // A frozen instance cannot hold a LISTEN: poll.
    runEvents: createPollingRunEventWaiter(),
    limits: {
      eventStreamMaxMs:
        mode === "stream" ? LAMBDA_EVENT_STREAM_MAX_MS : LAMBDA_BUFFERED_EVENT_STREAM_MAX_MS,
    },
  }),
);

// streamHandle needs the `awslambda` global of Lambda's Node.js runtime; it exists only there
// (and in the tests' runtime double), which is why the mode is chosen before touching it.
export const handler = mode === "stream" ? streamHandle(app) : handle(app);
