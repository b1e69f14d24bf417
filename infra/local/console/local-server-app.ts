import { Hono } from "hono";
import { LOCAL_CONSOLE_CONFIG } from "./console-config.ts";
import { registerConsoleStatic } from "./console-static.ts";
import { registerDevTokenRoute } from "./dev-token-route.ts";
import { registerS3UploadProxy, type S3UploadProxyDeps } from "./s3-upload-proxy.ts";

type FetchApp = { fetch(request: Request, env?: unknown): Response | Promise<Response> };

export type LocalServerAppDeps = {
  /** The functions app (createApp): everything under /v1 and /openapi.json. */
  api: FetchApp;
  /** The built console (web/dist). */
  consoleDir: string;
  /** fauxqs and the two S3 clients of the verified upload path (s3-upload-proxy.ts). */
  uploads: S3UploadProxyDeps;
  devJwtSecret: string;
};

/**
 * What the local Workcell serves on its one port: the API unchanged, the web console
 * with its public config, and two local-only helpers the console needs on this machine
 * (dev tokens, the same-origin S3 upload path). None of this exists in a cloud entry:
 * there the console is a static site and sign-in is OIDC (docs/decisions/0022).
 */
export function createLocalServerApp(deps: LocalServerAppDeps): Hono {
  const app = new Hono();
  const api = (c: { req: { raw: Request }; env: unknown }) => deps.api.fetch(c.req.raw, c.env);
  app.all("/v1/*", api);
  app.all("/openapi.json", api);
  app.get("/config.json", (c) =>
    c.json(LOCAL_CONSOLE_CONFIG, 200, { "cache-control": "no-cache" }),
  );
  registerDevTokenRoute(app, { devJwtSecret: deps.devJwtSecret });
  registerS3UploadProxy(app, deps.uploads);
  registerConsoleStatic(app, { consoleDir: deps.consoleDir });
  // Anything else (POST /, unknown /local paths) gets the API's JSON 404.
  app.all("*", api);
  return app;
}
