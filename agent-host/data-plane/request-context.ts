import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import type { DataPlaneEnv } from "./data-plane-env.ts";

export const REQUEST_ID_HEADER = "X-Request-Id";
const MAX_INCOMING_REQUEST_ID_CHARS = 128;
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]+$/;

/**
 * Gives each request an id (the caller's when short and safe to log, e.g. functions/
 * forwarding its own; else a fresh UUID), echoes it, puts a child logger on `c.var`, and
 * logs one line per request. Query strings are not logged: paths are the user's data.
 */
export function requestContext(logger: Logger): MiddlewareHandler<DataPlaneEnv> {
  return async function requestContextMiddleware(c, next) {
    const started = performance.now();
    const incoming = c.req.header(REQUEST_ID_HEADER);
    const requestId =
      incoming !== undefined &&
      incoming.length <= MAX_INCOMING_REQUEST_ID_CHARS &&
      SAFE_REQUEST_ID.test(incoming)
        ? incoming
        : crypto.randomUUID();
    c.set("requestId", requestId);
    c.set("logger", logger.child({ request_id: requestId }));
    c.header(REQUEST_ID_HEADER, requestId);
    await next();
    c.var.logger.debug(
      {
        method: c.req.method,
        route: c.req.routePath,
        status: c.res.status,
        ms: Math.round(performance.now() - started),
      },
      "request",
    );
  };
}
