import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { mintDevToken } from "../../../infra/local/dev-token.ts";
import { type LocalStack, localNodeId, startLocalStack } from "../../../infra/local/local-stack.ts";
import { localEnvSchema } from "../../../shared/env/local-env.ts";
import { parseEnv } from "../../../shared/env/parse-env.ts";
import { type MetricsServer, startMetricsServer } from "../../../shared/metrics/metrics-server.ts";
import { createProcessMetrics } from "../../../shared/metrics/process-metrics.ts";
import { freePort } from "../../setup/free-port.ts";
import { removeContainersLabelled, requireDocker } from "../../support/docker.ts";
import { captureLogs, type LogLine } from "../../support/log-capture.ts";
import { type Scrape, scrapeMetrics } from "../../support/metrics-scrape.ts";

export type ObservedStack = {
  /** The API, served over HTTP on loopback. */
  url: string;
  /** The one ops listener of the process (both planes count into its registry). */
  metricsUrl: string;
  scrape(): Promise<Scrape>;
  /** Every JSON line the process logged so far, parsed (and as written). */
  lines: LogLine[];
  raw: string[];
  token(uid: string, options?: { admin?: boolean }): Promise<string>;
  /** The tier runs that name none get here (process where both are ready). */
  defaultTier: "container" | "process";
  stop(): Promise<void>;
};

/**
 * The local Workcell wired as `npm start` wires it (one process: API, agent-host with
 * Docker sandboxes, PostgreSQL, fauxqs), with one process registry served by a real ops
 * listener and a real pino logger writing into memory.
 */
export async function startObservedStack(): Promise<ObservedStack> {
  const { docker, image } = requireDocker();
  const dataDir = await mkdtemp(join(tmpdir(), "workcell-observed-"));
  const port = await freePort();
  const env = parseEnv(localEnvSchema, {
    PORT: String(port),
    DATA_DIR: dataDir,
    AWS_EMULATOR_PORT: String(await freePort()),
    DATA_PLANE_PORT: String(await freePort()),
    SANDBOX_IMAGE: image,
    LOG_LEVEL: "info",
  });
  const { logger, lines, raw } = captureLogs("info");
  const metrics = createProcessMetrics();
  let stack: LocalStack | undefined;
  let server: Server | undefined;
  let metricsServer: MetricsServer | undefined;
  const stop = async () => {
    if (server !== undefined) {
      const closing = server;
      await new Promise<void>((done) => closing.close(() => done()));
    }
    await metricsServer?.close();
    await stack?.stop();
    await removeContainersLabelled(docker, LABEL.nodeId, localNodeId(dataDir));
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    stack = await startLocalStack({
      env,
      dataDir,
      publicUrl: `http://127.0.0.1:${port}`,
      logger,
      metrics,
    });
    const defaultTier = stack.sandboxDriver.kind;
    if (defaultTier === "none") {
      throw new Error(`no sandbox tier: ${stack.sandboxDriver.detail}`);
    }
    metricsServer = await startMetricsServer({
      registry: metrics.registry,
      port: 0,
      hostname: "127.0.0.1",
      logger,
    });
    const app = stack.app;
    await new Promise<void>((listening) => {
      server = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, () =>
        listening(),
      ) as Server;
    });
    const secret = stack.secrets.devJwtSecret;
    const metricsUrl = `${metricsServer.url}/metrics`;
    return {
      url: `http://127.0.0.1:${port}`,
      metricsUrl,
      scrape: () => scrapeMetrics(metricsUrl),
      lines,
      raw,
      token: (uid, options) => mintDevToken(secret, uid, options),
      defaultTier,
      stop,
    };
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
}
