import type { Context } from "hono";
import { matchedRoutes } from "hono/route";

/** The route label of a request no route matched (a 404 from notFound). */
export const UNMATCHED_ROUTE = "unmatched";

/**
 * The route template of the handler a request was routed to, in the OpenAPI form
 * (`/v1/runs/{run_id}`), never the concrete path: paths carry ids and user file names,
 * which must not become log fields of every line nor metric labels. Taken from every
 * route the router matched (not only those that ran), so a request refused by a
 * middleware (401, 413) still names the route it asked for; middleware (`app.use`,
 * method ALL) does not count as a route.
 */
export function routeTemplate(c: Context): string {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const route = routes[i];
    if (route !== undefined && route.method !== "ALL") return openApiPath(route.path);
  }
  return UNMATCHED_ROUTE;
}

/** Hono's `/v1/runs/:run_id` (or `:id{[0-9]+}`) → `/v1/runs/{run_id}`. */
export function openApiPath(honoPath: string): string {
  return honoPath.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, "{$1}");
}
