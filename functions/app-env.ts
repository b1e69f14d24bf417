import type { Logger } from "pino";
import type { TraceContext } from "../shared/telemetry/tracing.ts";
import type { Principal } from "./auth/principal.ts";

/** Per-request variables every route can read (`c.var`). */
export type AppEnv = {
  Variables: {
    requestId: string;
    /** Child logger carrying the request id (and the uid once authenticated). */
    logger: Logger;
    /** The request span's context (traceRequests): what a handler starts is its child. */
    trace: TraceContext;
    /** Set by errorHandler: the catalogue code of a refused or failed request. */
    errorCode: string;
    errorReason: unknown;
    /** Set by the authenticate middleware on every route under /v1 except health. */
    principal: Principal;
  };
};
