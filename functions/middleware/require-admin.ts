import type { MiddlewareHandler } from "hono";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { AppEnv } from "../app-env.ts";

/**
 * Guards every `/v1/admin/*` route. It runs as middleware, before any route's zod
 * validator, so a non-admin learns nothing from the body it sends (a 400 naming the
 * fields would tell a caller what an admin endpoint expects before it is even allowed in).
 * Expects the authenticate middleware in front (c.var.principal).
 */
export function requireAdmin(): MiddlewareHandler<AppEnv> {
  return async function requireAdminMiddleware(c, next) {
    if (!c.var.principal.admin) {
      throw new WorkcellError(
        "forbidden",
        "Only administrators use /v1/admin: use a token carrying the admin claim.",
        { details: { reason: "admin_required" } },
      );
    }
    await next();
  };
}
