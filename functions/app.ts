import { OpenAPIHono } from "@hono/zod-openapi";
import { WorkcellError } from "../shared/errors/index.ts";
import type { AppDeps } from "./app-deps.ts";
import type { AppEnv } from "./app-env.ts";
import { errorHandler } from "./middleware/error-handler.ts";
import { requestContext } from "./middleware/request-context.ts";
import { registerHealthRoute } from "./routes/health-route.ts";

/**
 * The control plane as a web-standard app: only Request/Response inside, so the same
 * object is served by Node, AWS Lambda and Cloudflare Workers (functions/entry/).
 */
export function createApp(deps: AppDeps): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>();
  app.use(requestContext(deps.logger));
  app.onError(errorHandler());
  app.notFound(() => {
    throw new WorkcellError("not_found", "No such route: see GET /openapi.json for the API.");
  });

  registerHealthRoute(app, deps.health);

  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: { title: "Workcell API", version: "1" },
  });
  return app;
}
