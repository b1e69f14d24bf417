import type { MiddlewareHandler } from "hono";
import { type CorsOrigins, corsForOrigins } from "../../shared/http/cors-for-origins.ts";
import { REQUEST_ID_HEADER } from "./request-context.ts";

/** How long a browser may cache a preflight answer. */
const CORS_MAX_AGE_SECONDS = 600;

/**
 * CORS of the public API (docs/api.md "Conventions"): the request headers a client sends
 * (Authorization, Content-Type, Idempotency-Key, Last-Event-ID) and the response headers a
 * page needs to read (the request id for support, Retry-After for a 429 or 503).
 */
export function apiCors(origins: CorsOrigins): MiddlewareHandler {
  return corsForOrigins({
    origins,
    allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
    allowHeaders: ["Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID"],
    exposeHeaders: [REQUEST_ID_HEADER, "Retry-After"],
    maxAgeSeconds: CORS_MAX_AGE_SECONDS,
  });
}
