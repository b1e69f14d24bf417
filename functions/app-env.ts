import type { Logger } from "pino";

/** Per-request variables every route can read (`c.var`). */
export type AppEnv = {
  Variables: {
    requestId: string;
    /** Child logger carrying the request id (and the uid once authenticated). */
    logger: Logger;
  };
};
