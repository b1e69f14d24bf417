import type { MiddlewareHandler } from "hono";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { AppEnv } from "../app-env.ts";
import { bearerToken } from "../auth/bearer-token.ts";
import type { TokenVerifier } from "../auth/token-verifier.ts";

/**
 * Requires a valid bearer token and puts the principal on `c.var`. Every refusal is the
 * same bare 401 (no hint which check failed); the reason goes to the log only.
 */
export function authenticate(verifier: TokenVerifier): MiddlewareHandler<AppEnv> {
  return async function authenticateMiddleware(c, next) {
    const token = bearerToken(c.req.header("Authorization"));
    if (token === undefined) {
      c.var.logger.info({ reason: "no bearer token" }, "authentication refused");
      throw new WorkcellError("unauthenticated");
    }
    const result = await verifier.verify(token, c.req.raw.signal);
    if (!result.ok) {
      c.var.logger.info({ reason: result.reason }, "authentication refused");
      throw new WorkcellError("unauthenticated");
    }
    c.set("principal", result.principal);
    c.set("logger", c.var.logger.child({ uid: result.principal.uid }));
    await next();
  };
}
