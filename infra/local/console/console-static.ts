import { existsSync } from "node:fs";
import { join } from "node:path";
import { serveStatic } from "@hono/node-server/serve-static";
import type { Hono } from "hono";
import { CONSOLE_SECURITY_HEADERS } from "../../../shared/contracts/console-csp.ts";

/** Paths that belong to the API or to local-only endpoints: never answered with the SPA. */
const NOT_SPA = [/^\/v1(\/|$)/, /^\/openapi\.json$/, /^\/local(\/|$)/, /^\/assets\//];

/**
 * The built console (web/dist) at `/`, with the SPA fallback: any other GET answers
 * index.html, so shareable URLs like /threads/<id>/files/outputs/a.txt open the app.
 * Registered after the API, so it never shadows /v1 or /openapi.json; an unknown /v1
 * route keeps its JSON 404. Built assets have content hashes in their names. Every
 * response from here on carries the console's CSP and nosniff (docs/decisions/0103).
 */
export function registerConsoleStatic(app: Hono, p: { consoleDir: string }): void {
  const index = join(p.consoleDir, "index.html");
  app.use("*", async (c, next) => {
    await next();
    for (const [name, value] of Object.entries(CONSOLE_SECURITY_HEADERS))
      c.res.headers.set(name, value);
  });
  app.use("/assets/*", async (c, next) => {
    await next();
    if (c.res.ok) c.res.headers.set("cache-control", "public, max-age=31536000, immutable");
  });
  app.get("*", serveStatic({ root: p.consoleDir }));
  app.get("*", async (c, next) => {
    if (NOT_SPA.some((pattern) => pattern.test(c.req.path))) return next();
    if (!existsSync(index)) {
      return c.text(
        `The web console is not built (no ${index}). Run: npm run build:web (scripts/local.sh does it).`,
        503,
      );
    }
    c.header("cache-control", "no-cache");
    return serveStatic({ path: index })(c, next);
  });
}
