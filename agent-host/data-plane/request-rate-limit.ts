import type { MiddlewareHandler } from "hono";
import { domainError } from "../../shared/errors/domain-errors.ts";
import type { RequestRateLimiter } from "../../shared/limits/request-rate-limiter.ts";
import type { DataPlaneEnv } from "./data-plane-env.ts";

/**
 * After the capability: one request of its uid's requests_per_minute, drawn from the same
 * Postgres bucket as the API's (shared/limits/request-rate-limiter.ts), or 429
 * `requests_per_minute` with Retry-After before any route runs, so a refused request
 * reads and writes nothing (issue 37 item 8: the data plane was not limited at all).
 */
export function limitRequestRate(limiter: RequestRateLimiter): MiddlewareHandler<DataPlaneEnv> {
  return async function requestRateLimit(c, next) {
    const decision = await limiter.take(c.var.capability.uid, c.req.raw.signal);
    if (!decision.ok) {
      throw domainError("requests_per_minute", {
        details: { retry_after_seconds: decision.retryAfterSeconds },
      });
    }
    await next();
  };
}
