import type { Context } from "hono";
import type { RequestOrigin } from "../../shared/http/request-origin.ts";
import { injectTrace, type Tracing } from "../../shared/telemetry/tracing.ts";
import type { AppEnv } from "../app-env.ts";

export { originHeaders, type RequestOrigin } from "../../shared/http/request-origin.ts";

/**
 * The origin of the current API request: its id and its trace context as W3C headers
 * (empty when tracing is off: nothing is sent, nothing is computed but an empty object).
 */
export function requestOriginOf(c: Context<AppEnv>, tracing: Tracing | undefined): RequestOrigin {
  return {
    requestId: c.var.requestId,
    traceHeaders: tracing === undefined ? {} : injectTrace(tracing, c.var.trace),
  };
}
