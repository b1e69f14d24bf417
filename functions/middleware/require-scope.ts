import type { MiddlewareHandler } from "hono";
import type { TokenScope } from "../../shared/contracts/personal-token.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { AppEnv } from "../app-env.ts";

/** What a request needs of a personal access token: a scope, or a sign-in token. */
export type RouteNeed = TokenScope | "sign_in";

/**
 * The scope map of docs/api.md: `/v1/admin/*` admin; `/v1/tokens*` a sign-in token; the
 * data-plane capabilities (`…/files/access`) files; every other `/v1` route runs. By path,
 * so a route added later is covered (as `runs`) without anyone remembering to tag it.
 */
export function routeNeed(path: string): RouteNeed {
  if (path.startsWith("/v1/admin/") || path === "/v1/admin") return "admin";
  if (path === "/v1/tokens" || path.startsWith("/v1/tokens/")) return "sign_in";
  if (/^\/v1\/threads\/[^/]+\/files\/access$/.test(path)) return "files";
  return "runs";
}

/**
 * Refuses a personal access token outside its scopes (403), before any validator runs.
 * Sign-in tokens (no `scopes`) pass: their user's own rights apply.
 */
export function requireScope(): MiddlewareHandler<AppEnv> {
  return async function requireScopeMiddleware(c, next) {
    const { scopes } = c.var.principal;
    if (scopes !== undefined) {
      const need = routeNeed(c.req.path);
      if (need === "sign_in") {
        throw new WorkcellError(
          "forbidden",
          "Personal access tokens are managed with a sign-in token, not with a personal access token.",
          { details: { reason: "sign_in_required" } },
        );
      }
      if (!scopes.includes(need)) {
        throw new WorkcellError(
          "forbidden",
          `This personal access token lacks the '${need}' scope: create one that has it.`,
          { details: { reason: "scope_required", scope: need } },
        );
      }
    }
    await next();
  };
}
