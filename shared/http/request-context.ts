import type { Context } from "@opentelemetry/api";
import type { MiddlewareHandler } from "hono";
import type { Logger } from "pino";
import type { HttpPlane, WorkcellMetrics } from "../metrics/workcell-metrics.ts";
import { traceLogFields } from "../telemetry/trace-log-fields.ts";
import { routeTemplate } from "./route-template.ts";

export const REQUEST_ID_HEADER = "X-Request-Id";
/** Longest caller-chosen request id taken as is; a longer one is replaced, never truncated. */
const MAX_INCOMING_REQUEST_ID_CHARS = 128;
const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]+$/;

/**
 * A request id from elsewhere (a header, a queue message) when it is short and safe to log
 * as is; undefined otherwise (a longer one is replaced, never truncated).
 */
export function safeRequestId(incoming: string | undefined): string | undefined {
  return incoming !== undefined &&
    incoming.length <= MAX_INCOMING_REQUEST_ID_CHARS &&
    SAFE_REQUEST_ID.test(incoming)
    ? incoming
    : undefined;
}

/** The per-request variables (`c.var`) that requestContext sets and errorHandler reads. */
export type RequestContextEnv = {
  Variables: {
    requestId: string;
    /** Child logger carrying the request id (and what later middleware adds: the uid). */
    logger: Logger;
    /** Set by errorHandler: the catalogue code of a refused or failed request. */
    errorCode: string;
    /** Set by errorHandler when its app logs refusal reasons (`details.reason`). */
    errorReason: unknown;
    /** Set by traceRequests when it runs first: the request span's context. */
    trace: Context;
  };
};

export interface RequestContextOptions {
  /** The app's logger; each request gets a child carrying its id. */
  readonly logger: Logger;
  /** Which app this is, in the metric labels. */
  readonly plane: HttpPlane;
  /** Counts each answer (workcell_http_requests_total and its duration histogram). */
  readonly metrics: WorkcellMetrics;
}

/**
 * Gives each request an id (the caller's when short and safe to log, e.g. functions/
 * forwarding its own; else a fresh UUID), echoes it on the response, puts a child logger
 * carrying it on `c.var`, and when the answer is ready logs one `request` line (method,
 * route template, status, duration_ms, and the uid through the child logger once
 * authentication set it) and counts it. Never the concrete path or query: they hold ids
 * and the users' file names. Web-standard only: it runs on Node, Lambda and Workers alike.
 */
export function requestContext<E extends RequestContextEnv = RequestContextEnv>(
  options: RequestContextOptions,
): MiddlewareHandler<E> {
  const { logger, plane, metrics } = options;
  return async function requestContextMiddleware(c, next) {
    const started = performance.now();
    const requestId = safeRequestId(c.req.header(REQUEST_ID_HEADER)) ?? crypto.randomUUID();
    c.set("requestId", requestId);
    c.set("logger", logger.child({ request_id: requestId, ...traceLogFields(c.get("trace")) }));
    c.header(REQUEST_ID_HEADER, requestId);
    metrics.httpRequestsInFlight.inc({ plane });
    try {
      await next();
    } finally {
      metrics.httpRequestsInFlight.dec({ plane });
    }
    const seconds = (performance.now() - started) / 1000;
    const method = c.req.method;
    const route = routeTemplate(c);
    const status = c.res.status;
    metrics.httpRequests.inc({ plane, method, route, status: String(status) });
    metrics.httpRequestSeconds.observe({ plane, method, route }, seconds);
    const code = c.get("errorCode") as string | undefined;
    const reason = c.get("errorReason");
    c.var.logger.info(
      {
        method,
        route,
        status,
        duration_ms: Math.round(seconds * 1000),
        ...(code === undefined ? {} : { error_code: code }),
        ...(reason === undefined ? {} : { reason }),
      },
      "request",
    );
  };
}
