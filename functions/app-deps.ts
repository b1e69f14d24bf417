import type { Logger } from "pino";
import type { HealthProbes } from "./health/health-probes.ts";

/**
 * Everything the stateless app needs, passed in once by an entry (node, lambda, worker,
 * or the local one-process Workcell). No route reaches for a global or for env vars.
 */
export type AppDeps = {
  logger: Logger;
  health: HealthProbes;
};
