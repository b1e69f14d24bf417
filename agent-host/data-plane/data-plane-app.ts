import { Hono } from "hono";
import { except } from "hono/combine";
import { Registry } from "prom-client";
import { WorkcellError } from "../../shared/errors/index.ts";
import { corsForOrigins } from "../../shared/http/cors-for-origins.ts";
import { drainRefusedBody } from "../../shared/http/drain-refused-body.ts";
import { traceRequests } from "../../shared/http/trace-requests.ts";
import { createWorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { noTracing } from "../../shared/telemetry/tracing.ts";
import { registerCheckpointHostRoute } from "../checkpoints/checkpoint-host-route.ts";
import { requireCapability } from "./capability-auth.ts";
import type { DataPlaneDeps } from "./data-plane-deps.ts";
import type { DataPlaneEnv } from "./data-plane-env.ts";
import { DEFAULT_DATA_PLANE_LIMITS } from "./data-plane-limits.ts";
import { dataPlaneOpenApiDocument } from "./data-plane-openapi.ts";
import { errorHandler } from "./error-handler.ts";
import { REQUEST_ID_HEADER, requestContext } from "./request-context.ts";
import { limitRequestRate } from "./request-rate-limit.ts";
import { registerBatchRoute } from "./routes/batch-route.ts";
import { registerContentRoutes } from "./routes/content-routes.ts";
import { registerDeleteRoute } from "./routes/delete-route.ts";
import { registerDirsRoute } from "./routes/dirs-route.ts";
import { registerHealthRoutes } from "./routes/health-routes.ts";
import { registerImportRoute } from "./routes/import-route.ts";
import { registerInternalRoutes } from "./routes/internal-routes.ts";
import { registerListRoute } from "./routes/list-route.ts";
import {
  registerSkillsInternalRoutes,
  SKILLS_INTERNAL_ROUTES,
} from "./routes/skills-internal-routes.ts";
import { registerUsageInternalRoute, WORKSPACE_USAGE_PATH } from "./routes/usage-internal-route.ts";
import { refuseServiceCapability } from "./service-capability-auth.ts";

/** How long a browser may cache a CORS preflight answer. */
const CORS_MAX_AGE_SECONDS = 600;

/**
 * The data-plane HTTP API of an agent-host (docs/api.md "Workdir files", plus the internal
 * endpoints functions/ calls). A web-standard Hono app: `startDataPlaneServer` serves it on
 * Node, tests may call `app.fetch` directly.
 *
 * Trust: the capability is the only authorization (verified with the public key before any
 * body is read or file touched); the workspace layer is the only filesystem access
 * (fd-relative, no-follow, no-clobber). This app decides nothing else.
 */
export function createDataPlaneApp(deps: DataPlaneDeps): Hono<DataPlaneEnv> {
  if (deps.publicKeys.length === 0) {
    throw new TypeError(
      "createDataPlaneApp needs the capability public key (CAPABILITY_PUBLIC_KEY).",
    );
  }
  const limits = { ...DEFAULT_DATA_PLANE_LIMITS, ...deps.limits };
  const metrics = deps.metrics ?? createWorkcellMetrics(new Registry());
  const app = new Hono<DataPlaneEnv>();
  // Outermost: a caller's trace (traceparent) continues through every data-plane request.
  app.use(traceRequests(deps.tracing ?? noTracing()));
  app.onError(errorHandler());
  app.notFound(() => {
    throw new WorkcellError(
      "not_found",
      "No such data-plane route: see docs/api.md 'Workdir files'.",
    );
  });
  app.use(requestContext(deps.logger, metrics));
  // A write refused before its body was read is answered once the body is read (bounded),
  // so the client sees the 507 / 413 rather than a reset connection.
  app.use(drainRefusedBody());
  // Every quota refusal of the data plane (PUT, batch, mkdir, attachment import) is an
  // error answer with this code, whichever route raised it: counted once, here.
  app.use(async function countQuotaRejections(c, next) {
    await next();
    if (c.get("errorCode") === "quota_exceeded") metrics.quotaRejections.inc();
  });
  // Browsers call /dp/v1 from the SPA's origin; preflights carry no token, so CORS answers
  // them before authentication. The internal endpoints are for functions/ only: no CORS.
  app.use(
    "/dp/v1/*",
    corsForOrigins({
      origins: deps.allowedOrigins ?? [],
      allowMethods: ["GET", "HEAD", "PUT", "POST", "DELETE"],
      allowHeaders: ["Authorization", "Content-Type", "Range", "If-Range", REQUEST_ID_HEADER],
      exposeHeaders: [
        "Content-Length",
        "Content-Range",
        "Accept-Ranges",
        "Content-Disposition",
        "Last-Modified",
        REQUEST_ID_HEADER,
      ],
      maxAgeSeconds: CORS_MAX_AGE_SECONDS,
    }),
  );
  // Public, like the API's: the contract of the routes below.
  app.get("/dp/openapi.json", (c) => c.json(dataPlaneOpenApiDocument(new URL(c.req.url).origin)));
  const authenticate = requireCapability(deps, limits.clockToleranceSec);
  // A service capability (skills, usage) is genuine but names no Workdir: 403 before the
  // Workdir check. The service routes authenticate service capabilities themselves (and
  // refuse Workdir ones): docs/decisions/0011-skills-over-the-data-plane.md, 0049.
  const refuseService = refuseServiceCapability(deps, limits.clockToleranceSec);
  app.use(
    "/dp/v1/*",
    refuseService,
    authenticate,
    ...(deps.rateLimiter === undefined ? [] : [limitRequestRate(deps.rateLimiter)]),
  );
  app.use(
    "/internal/v1/*",
    except([SKILLS_INTERNAL_ROUTES, WORKSPACE_USAGE_PATH], refuseService, authenticate),
  );

  const routeDeps = {
    userWorkspaces: deps.userWorkspaces,
    limits,
    bytes: metrics.dataPlaneBytes,
    ...(deps.quota === undefined ? {} : { quota: deps.quota }),
  };
  registerHealthRoutes(app, deps.readiness ?? (() => undefined));
  registerListRoute(app, routeDeps);
  registerContentRoutes(app, routeDeps);
  registerDeleteRoute(app, routeDeps);
  registerBatchRoute(app, routeDeps);
  registerDirsRoute(app, routeDeps);
  registerInternalRoutes(app, routeDeps);
  registerImportRoute(app, { ...routeDeps, attachments: deps.attachments });
  registerCheckpointHostRoute(app, {
    checkpoints: deps.checkpoints,
    userWorkspaces: deps.userWorkspaces,
    maxJsonBodyBytes: limits.maxJsonBodyBytes,
  });
  registerSkillsInternalRoutes(app, { ...deps, skills: deps.skills, limits });
  registerUsageInternalRoute(app, { ...deps, limits, quota: deps.quota });
  return app;
}
