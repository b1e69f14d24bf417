import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import { requestContext as sharedRequestContext } from "../../shared/http/request-context.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import type { AppEnv } from "../app-env.ts";

export { REQUEST_ID_HEADER } from "../../shared/http/request-context.ts";

/**
 * Gives each request an id (the caller's, when it is short and safe to log; otherwise a
 * fresh UUID), echoes it on the response, puts a child logger carrying it on `c.var`, and
 * logs and counts one line per request (plane `api`).
 */
export function requestContext(
  logger: Logger,
  metrics: WorkcellMetrics,
): MiddlewareHandler<AppEnv> {
  return sharedRequestContext({ logger, metrics, plane: "api" });
}
