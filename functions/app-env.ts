import type { RequestContextEnv } from "../shared/http/request-context.ts";
import type { TraceEnv } from "../shared/http/trace-requests.ts";
import type { Principal } from "./auth/principal.ts";

/**
 * Per-request variables every route can read (`c.var`): the shared middleware's (request
 * id, logger, error code, trace) and the caller the authenticate middleware found.
 */
export type AppEnv = {
  Variables: RequestContextEnv["Variables"] &
    TraceEnv["Variables"] & {
      /** Set by the authenticate middleware on every route under /v1 except health. */
      principal: Principal;
    };
};
