import type { MiddlewareHandler } from "hono";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { bearerToken } from "../../shared/http/bearer-token.ts";
import type { AppEnv } from "../app-env.ts";
import type { Principal } from "../auth/principal.ts";
import type { TokenVerifier } from "../auth/token-verifier.ts";
import type { EventTickets } from "../run-events/event-tickets.ts";
import { PERSONAL_TOKEN_PREFIX } from "../tokens/personal-token-secret.ts";
import type { PersonalTokens } from "../tokens/personal-token-store.ts";
import { eventTicketPrincipal } from "./event-ticket-principal.ts";

/**
 * Requires a valid bearer token (or, on a run's event stream only, that run's ticket) and
 * puts the principal on `c.var`. A `wct_` token is a personal access token, checked in the
 * database on every request; any other goes to the sign-in verifier (OIDC / dev). Every
 * refusal is the same bare 401 (no hint which check failed); the reason goes to the log
 * only, never the token.
 */
export function authenticate(
  verifier: TokenVerifier,
  tickets: EventTickets,
  personalTokens: PersonalTokens,
): MiddlewareHandler<AppEnv> {
  return async function authenticateMiddleware(c, next) {
    const token = bearerToken(c.req.header("Authorization"));
    let principal: Principal | undefined;
    if (token === undefined) {
      principal = await eventTicketPrincipal(c, tickets);
      if (principal === undefined) {
        c.var.logger.info({ reason: "no bearer token" }, "authentication refused");
        throw new WorkcellError("unauthenticated");
      }
    } else {
      const result = token.startsWith(PERSONAL_TOKEN_PREFIX)
        ? await personalTokens.verify(token)
        : await verifier.verify(token, c.req.raw.signal);
      if (!result.ok) {
        c.var.logger.info({ reason: result.reason }, "authentication refused");
        throw new WorkcellError("unauthenticated");
      }
      principal = result.principal;
    }
    c.set("principal", principal);
    c.set("logger", c.var.logger.child({ uid: principal.uid }));
    await next();
  };
}
