import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import { requestContext as sharedRequestContext } from "../../shared/http/request-context.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import type { DataPlaneEnv } from "./data-plane-env.ts";

export { REQUEST_ID_HEADER } from "../../shared/http/request-context.ts";

/**
 * Gives each request an id (the caller's when short and safe to log, e.g. functions/
 * forwarding its own; else a fresh UUID), echoes it, puts a child logger on `c.var`, and
 * logs and counts one line per request (plane `data_plane`). Query strings are not
 * logged: paths are the user's data.
 */
export function requestContext(
  logger: Logger,
  metrics: WorkcellMetrics,
): MiddlewareHandler<DataPlaneEnv> {
  return sharedRequestContext({ logger, metrics, plane: "data_plane" });
}
