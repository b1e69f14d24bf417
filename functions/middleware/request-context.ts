import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import type { AppEnv } from "../app-env.ts";

export const REQUEST_ID_HEADER = "X-Request-Id";
const MAX_INCOMING_REQUEST_ID_LENGTH = 128;
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]+$/;

/**
 * Gives each request an id (the caller's, when it is short and safe to log; otherwise a
 * fresh UUID), echoes it on the response and puts a child logger carrying it on `c.var`.
 */
export function requestContext(logger: Logger): MiddlewareHandler<AppEnv> {
  return async function requestContextMiddleware(c, next) {
    const incoming = c.req.header(REQUEST_ID_HEADER);
    const requestId =
      incoming &&
      incoming.length <= MAX_INCOMING_REQUEST_ID_LENGTH &&
      SAFE_REQUEST_ID.test(incoming)
        ? incoming
        : crypto.randomUUID();
    c.set("requestId", requestId);
    c.set("logger", logger.child({ request_id: requestId }));
    c.header(REQUEST_ID_HEADER, requestId);
    await next();
  };
}
