// The local Workcell in one Node process (docs/architecture.md §8): the functions app on a
// local port, PostgreSQL (started and stopped by this process) and emulated SQS + S3 (fauxqs), all state
// under DATA_DIR, migrations applied at start. `npm start`, or scripts/local.sh on a
// fresh machine. Ctrl-C stops it cleanly; starting again keeps the data.
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { serve } from "@hono/node-server";
import pino from "pino";
import { localEnvSchema } from "../../shared/env/local-env.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";
import { loggerOptions } from "../../shared/logging/safe-error-serializer.ts";
import { createProcessMetrics, serveProcessMetrics } from "../../shared/metrics/process-metrics.ts";
import { onStopSignals } from "../../shared/process/bounded-shutdown.ts";
import { startTracing } from "../../shared/telemetry/start-tracing.ts";
import { tracingEnvSchema } from "../../shared/telemetry/tracing-env.ts";
import { printBanner } from "./banner.ts";
import { createLocalServerApp } from "./console/local-server-app.ts";
import { startLocalStack } from "./local-stack.ts";

/** The whole clean stop (runs handed back, sandboxes destroyed, PostgreSQL stopped). */
const LOCAL_SHUTDOWN_DEADLINE_MS = 30_000;

const env = parseEnv(localEnvSchema, process.env);
const logger = pino(loggerOptions(env.LOG_LEVEL));
const dataDir = resolve(env.DATA_DIR);
await mkdir(dataDir, { recursive: true, mode: 0o700 });

const url = `http://127.0.0.1:${env.PORT}`;
// Off unless OTEL_* asks for it; one provider for both planes of this process.
const tracing = await startTracing(parseEnv(tracingEnvSchema, process.env), "workcell-local");
const metrics = createProcessMetrics();
const stack = await startLocalStack({
  env,
  dataDir,
  publicUrl: url,
  logger,
  tracing: tracing.tracing,
  metrics,
});
const app = createLocalServerApp({
  api: stack.app,
  // Relative to the repository (not the cwd), like the rest of `npm start`'s defaults.
  consoleDir: resolve(import.meta.dirname, "../..", env.CONSOLE_DIR),
  uploads: { awsEndpoint: stack.awsEndpoint, ...stack.uploadClients },
  devJwtSecret: stack.secrets.devJwtSecret,
});
const server = serve({ fetch: app.fetch, port: env.PORT, hostname: "127.0.0.1" });
const metricsServer = await serveProcessMetrics(metrics, {
  port: env.METRICS_PORT,
  hostname: env.METRICS_HOST,
  logger,
});
printBanner({ url, dataDir, stack });

// Ctrl-C or SIGTERM ends the process within LOCAL_SHUTDOWN_DEADLINE_MS whatever it waits
// on; a PostgreSQL left running by an abandoned stop is stopped by the next start.
onStopSignals({
  logger,
  deadlineMs: LOCAL_SHUTDOWN_DEADLINE_MS,
  steps: [
    { name: "http server", run: () => new Promise<void>((done) => server.close(() => done())) },
    { name: "local stack", run: () => stack.stop() },
    { name: "trace export", run: () => tracing.shutdown() },
    { name: "metrics server", run: async () => metricsServer?.close() },
  ],
});
