import type { Logger } from "pino";
import type { CapabilityClaims } from "../../shared/capability/capability-claims.ts";
import type { TraceContext } from "../../shared/telemetry/tracing.ts";

/** Per-request variables of the data-plane app (`c.var`). */
export type DataPlaneEnv = {
  Variables: {
    requestId: string;
    /** Child logger carrying the request id, then the uid and the capability's jti. */
    logger: Logger;
    /** The request span's context (traceRequests). */
    trace: TraceContext;
    /** Set by errorHandler: the catalogue code (and reason) of a refused or failed request. */
    errorCode: string;
    errorReason: unknown;
    /** The verified capability; set by `requireCapability` on every authorized route. */
    capability: CapabilityClaims;
  };
};
