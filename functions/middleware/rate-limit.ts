import type { MiddlewareHandler } from "hono";
import { domainError } from "../../shared/errors/domain-errors.ts";
import type { RequestRateLimiter } from "../../shared/limits/request-rate-limiter.ts";
import type { AppEnv } from "../app-env.ts";

/**
 * After authentication: one request of the caller's requests_per_minute, or 429
 * `requests_per_minute` with Retry-After before any route runs (so a refused request
 * changes nothing).
 */
export function rateLimit(limiter: RequestRateLimiter): MiddlewareHandler<AppEnv> {
  return async function rateLimitMiddleware(c, next) {
    const decision = await limiter.take(c.var.principal.uid, c.req.raw.signal);
    if (!decision.ok) {
      throw domainError("requests_per_minute", {
        details: { retry_after_seconds: decision.retryAfterSeconds },
      });
    }
    await next();
  };
}
