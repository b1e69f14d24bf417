// Node only (node:http): imported by the long-lived entries (functions' Node entry, an
// agent-host, the local Workcell), never by code that runs on Lambda or Workers.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import type { Registry } from "prom-client";

/** A scrape that takes longer than this is answered 503 (a collector hung). */
export const METRICS_SCRAPE_TIMEOUT_MS = 10_000;

export interface MetricsServerOptions {
  readonly registry: Registry;
  /** METRICS_PORT; 0 picks a free port. */
  readonly port: number;
  /** METRICS_HOST (loopback by default, metrics-env.ts). */
  readonly hostname: string;
  readonly logger: Logger;
}

export interface MetricsServer {
  /** `http://<host>:<port>`; GET `${url}/metrics` is the scrape target. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * The ops listener: GET /metrics in the Prometheus text format, nothing else (404), no
 * auth: it is bound to loopback unless the operator binds it elsewhere, and it carries no
 * uid, run id or path (workcell-metrics.ts). A separate listener from the API and the
 * data plane, so a scrape never competes with, or is exposed like, user traffic.
 */
export function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const { registry, logger } = options;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0];
    if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
      res.writeHead(404, { "Content-Type": "text/plain" }).end("Not found: GET /metrics\n");
      return;
    }
    const timeout = new Promise<never>((_, reject) => {
      setTimeout(
        () => reject(new Error("metrics collection timed out")),
        METRICS_SCRAPE_TIMEOUT_MS,
      ).unref();
    });
    Promise.race([registry.metrics(), timeout]).then(
      (text) => {
        res.writeHead(200, { "Content-Type": registry.contentType, "Cache-Control": "no-store" });
        res.end(req.method === "HEAD" ? undefined : text);
      },
      (error: unknown) => {
        logger.error({ err: error }, "metrics scrape failed");
        res.writeHead(503, { "Content-Type": "text/plain" }).end("metrics unavailable\n");
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const info = server.address() as AddressInfo;
      const host = info.family === "IPv6" ? `[${info.address}]` : info.address;
      let closing: Promise<void> | undefined;
      resolve({
        url: `http://${host}:${info.port}`,
        port: info.port,
        close() {
          closing ??= new Promise<void>((done) => {
            server.close(() => done());
            server.closeIdleConnections();
          });
          return closing;
        },
      });
    });
  });
}
