// Node only: the process metrics collectors read process and perf_hooks state.
import type { Logger } from "pino";
import { collectDefaultMetrics, Registry } from "prom-client";
import { type MetricsServer, startMetricsServer } from "./metrics-server.ts";
import { createWorkcellMetrics, type WorkcellMetrics } from "./workcell-metrics.ts";

/**
 * The one registry of a long-lived Node process: Workcell's series plus prom-client's
 * process metrics (CPU, memory, event loop lag, GC, handles). Made by the entry and passed
 * to every part, so each process has exactly one.
 */
export function createProcessMetrics(): WorkcellMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return createWorkcellMetrics(registry);
}

/**
 * Starts the ops listener (METRICS_HOST:METRICS_PORT). A port that cannot be bound is
 * logged as an error and the process carries on without it (docs/decisions/0031): the
 * API and the run worker matter more than their metrics, and the scrape target being
 * down is what Prometheus then shows.
 */
export async function serveProcessMetrics(
  metrics: WorkcellMetrics,
  o: { port: number; hostname: string; logger: Logger },
): Promise<MetricsServer | undefined> {
  try {
    const server = await startMetricsServer({ registry: metrics.registry, ...o });
    o.logger.info({ metrics_url: `${server.url}/metrics` }, "metrics listening");
    return server;
  } catch (error) {
    o.logger.error(
      { err: error, port: o.port, host: o.hostname },
      "metrics listener could not start: set METRICS_PORT to a free port (or METRICS_HOST to a local address)",
    );
    return undefined;
  }
}
