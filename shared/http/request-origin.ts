import { REQUEST_ID_HEADER } from "./request-context.ts";

/**
 * The API request a control-plane call to the data plane is made for (docs/decisions/0054):
 * its id, sent as `X-Request-Id` so the data plane's log lines carry it, and its trace
 * context as W3C headers (empty when tracing is off: nothing is sent), so the data plane's
 * SERVER span continues the request's trace. In shared/ because the skills seam
 * (shared/contracts/skills-data-plane.ts) names it.
 */
export type RequestOrigin = {
  readonly requestId: string;
  readonly traceHeaders: Readonly<Record<string, string>>;
};

/** The headers a data-plane call carries for its origin (none without one). */
export function originHeaders(origin: RequestOrigin | undefined): Record<string, string> {
  if (origin === undefined) return {};
  return { ...origin.traceHeaders, [REQUEST_ID_HEADER]: origin.requestId };
}
