import { trace } from "@opentelemetry/api";
import type { MiddlewareHandler } from "hono";
import {
  extractTrace,
  failSpan,
  SpanKind,
  type TraceContext,
  type Tracing,
} from "../telemetry/tracing.ts";
import { routeTemplate } from "./route-template.ts";

/** The per-request variable traceRequests sets: the request span's context. */
export type TraceEnv = { Variables: { trace: TraceContext } };

/**
 * One SERVER span per request, continuing the caller's trace when it sends W3C
 * `traceparent` / `tracestate` (the SDK, the console, functions/ calling the data plane).
 * The span is named by method and route template (`POST /v1/runs`), never the concrete
 * path, and its context is `c.var.trace` for what the handler starts (the queue hop).
 * Web-standard only: Node, Lambda and Workers alike.
 */
export function traceRequests<E extends TraceEnv>(tracing: Tracing): MiddlewareHandler<E> {
  return async function traceRequestsMiddleware(c, next) {
    const parent = extractTrace(tracing, {
      ...headerOf(c.req.header("traceparent"), "traceparent"),
      ...headerOf(c.req.header("tracestate"), "tracestate"),
    });
    const span = tracing.tracer.startSpan(
      c.req.method,
      { kind: SpanKind.SERVER, attributes: { "http.request.method": c.req.method } },
      parent,
    );
    c.set("trace", trace.setSpan(parent, span));
    try {
      await next();
    } catch (error) {
      failSpan(span, error);
      throw error;
    } finally {
      const route = routeTemplate(c);
      span.updateName(`${c.req.method} ${route}`);
      span.setAttribute("http.route", route);
      span.setAttribute("http.response.status_code", c.res.status);
      if (c.res.status >= 500) failSpan(span, new Error(`HTTP ${c.res.status}`));
      span.end();
    }
  };
}

function headerOf(value: string | undefined, name: string): Record<string, string> {
  return value === undefined ? {} : { [name]: value };
}
