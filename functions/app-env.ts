import type { Logger } from "pino";
import type { Principal } from "./auth/principal.ts";

/** Per-request variables every route can read (`c.var`). */
export type AppEnv = {
  Variables: {
    requestId: string;
    /** Child logger carrying the request id (and the uid once authenticated). */
    logger: Logger;
    /** Set by the authenticate middleware on every route under /v1 except health. */
    principal: Principal;
  };
};
