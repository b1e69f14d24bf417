import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";

export const REQUEST_ID_HEADER = "X-Request-Id";
/** Longest caller-chosen request id taken as is; a longer one is replaced, never truncated. */
const MAX_INCOMING_REQUEST_ID_CHARS = 128;
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]+$/;

/** The per-request variables (`c.var`) that requestContext sets and errorHandler reads. */
export type RequestContextEnv = {
  Variables: {
    requestId: string;
    /** Child logger carrying the request id. */
    logger: Logger;
  };
};

export interface RequestContextOptions {
  /** The app's logger; each request gets a child carrying its id. */
  readonly logger: Logger;
  /**
   * Log one debug line per request (method, route, status, ms); default false. Query
   * strings are never logged: paths are the user's data.
   */
  readonly logEachRequest?: boolean;
}

/**
 * Gives each request an id (the caller's when short and safe to log, e.g. functions/
 * forwarding its own; else a fresh UUID), echoes it on the response and puts a child logger
 * carrying it on `c.var`. Web-standard only: it runs on Node, Lambda and Workers alike.
 */
export function requestContext<E extends RequestContextEnv = RequestContextEnv>(
  options: RequestContextOptions,
): MiddlewareHandler<E> {
  const { logger, logEachRequest = false } = options;
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
    if (!logEachRequest) return;
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
