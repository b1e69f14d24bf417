import type { CapabilityClaims } from "../../shared/capability/capability-claims.ts";
import type { RequestContextEnv } from "../../shared/http/request-context.ts";
import type { TraceEnv } from "../../shared/http/trace-requests.ts";

/**
 * Per-request variables of the data-plane app (`c.var`): the shared middleware's (request
 * id, a logger that also carries the uid and the capability's jti, error code, trace) and
 * the verified capability.
 */
export type DataPlaneEnv = {
  Variables: RequestContextEnv["Variables"] &
    TraceEnv["Variables"] & {
      /** The verified capability; set by `requireCapability` on every authorized route. */
      capability: CapabilityClaims;
    };
};
