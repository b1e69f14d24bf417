import { z } from "zod";
import { intVar, MAX_TCP_PORT } from "./env-vars.ts";

/** The Prometheus ops listener's port unless METRICS_PORT says otherwise (docs/api.md "Health"). */
export const DEFAULT_METRICS_PORT = 9464;
/** Loopback: exposing metrics beyond the host is a deliberate act (METRICS_HOST). */
export const DEFAULT_METRICS_HOST = "127.0.0.1";

/**
 * The ops listener settings every long-lived Node process reads (functions' Node entry,
 * an agent-host, the local Workcell): GET /metrics in the Prometheus text format.
 */
export const metricsEnvShape = {
  METRICS_PORT: intVar(0, MAX_TCP_PORT)
    .default(DEFAULT_METRICS_PORT)
    .describe(
      `TCP port of the ops listener serving GET /metrics (default ${DEFAULT_METRICS_PORT}; 0 picks a free port, which is logged).`,
    ),
  METRICS_HOST: z
    .string()
    .min(1)
    .default(DEFAULT_METRICS_HOST)
    .describe(
      `Address the ops listener binds (default ${DEFAULT_METRICS_HOST}; 0.0.0.0 lets a Prometheus on another host scrape it).`,
    ),
};
