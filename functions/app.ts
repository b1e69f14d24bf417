import { OpenAPIHono } from "@hono/zod-openapi";
import { Registry } from "prom-client";
import { runEventSchema } from "../shared/contracts/run-event.ts";
import { WorkcellError } from "../shared/errors/index.ts";
import { limitBody } from "../shared/http/body-limit.ts";
import { traceRequests } from "../shared/http/trace-requests.ts";
import { createRequestRateLimiter } from "../shared/limits/request-rate-limiter.ts";
import { DEFAULT_USER_LIMITS } from "../shared/limits/user-limits.ts";
import { createWorkcellMetrics } from "../shared/metrics/workcell-metrics.ts";
import { noTracing } from "../shared/telemetry/tracing.ts";
import type { AppDeps } from "./app-deps.ts";
import type { AppEnv } from "./app-env.ts";
import { DEFAULT_APP_LIMITS } from "./app-limits.ts";
import { countAwaitingRuns } from "./approvals/count-awaiting-runs.ts";
import { apiCors } from "./middleware/api-cors.ts";
import { authenticate } from "./middleware/authenticate.ts";
import { errorHandler } from "./middleware/error-handler.ts";
import { rateLimit } from "./middleware/rate-limit.ts";
import { requestContext } from "./middleware/request-context.ts";
import { requireAdmin } from "./middleware/require-admin.ts";
import { requireScope } from "./middleware/require-scope.ts";
import { validationHook } from "./middleware/validation-hook.ts";
import { documentApi } from "./openapi/document-api.ts";
import { registerApprovalRoutes } from "./routes/approval-routes.ts";
import { registerAttachmentRoutes } from "./routes/attachment-routes.ts";
import { registerCheckpointRoutes } from "./routes/checkpoint-routes.ts";
import { registerFilesAccessRoute } from "./routes/files-access-route.ts";
import { registerHealthRoute } from "./routes/health-route.ts";
import { registerLimitsRoutes } from "./routes/limits-routes.ts";
import { registerNetworkRoutes } from "./routes/network-routes.ts";
import { registerNodeRoutes } from "./routes/node-routes.ts";
import { BEARER_SCHEME } from "./routes/openapi-common.ts";
import { registerProjectRoutes } from "./routes/project-routes.ts";
import { registerRunEventTicketRoute } from "./routes/run-event-ticket-route.ts";
import { registerRunEventsRoute } from "./routes/run-events-route.ts";
import { registerRunRoutes } from "./routes/run-routes.ts";
import { registerSecretRoutes } from "./routes/secret-routes.ts";
import { registerSkillRoutes } from "./routes/skills-routes.ts";
import { registerThreadRoutes } from "./routes/thread-routes.ts";
import { registerThreadRunsRoute } from "./routes/thread-runs-route.ts";
import { registerTokenRoutes } from "./routes/token-routes.ts";
import { registerUsageRoute } from "./routes/usage-route.ts";
import { createEventTickets } from "./run-events/event-tickets.ts";
import { recordedRunChanges } from "./runs/recorded-run-changes.ts";
import { ephemeralPersonalTokenKey } from "./tokens/personal-token-secret.ts";
import { createPersonalTokens } from "./tokens/personal-token-store.ts";

/**
 * The control plane as a web-standard app: only Request/Response inside, so the same
 * object is served by Node, AWS Lambda and Cloudflare Workers (functions/entry/).
 */
export function createApp(deps: AppDeps): OpenAPIHono<AppEnv> {
  const limits = { ...DEFAULT_APP_LIMITS, ...deps.limits };
  const metrics = deps.metrics ?? createWorkcellMetrics(new Registry());
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  const { flushTraces } = deps;
  if (flushTraces !== undefined) {
    // Outside the request's span, so the span has ended when its export is flushed.
    app.use(async function flushTracesAfterRequest(_c, next) {
      try {
        await next();
      } finally {
        await flushTraces().catch((error: unknown) =>
          deps.logger.warn({ err: error }, "could not export the request's spans"),
        );
      }
    });
  }
  // Outermost (after the flush): the request's span covers everything, preflights and
  // refusals included.
  app.use(traceRequests(deps.tracing ?? noTracing()));
  const { exportMetrics } = deps;
  if (exportMetrics !== undefined) {
    // Outermost, so the request's own line and counts (requestContext) are in the export.
    app.use(async function exportMetricsAfterRequest(_c, next) {
      try {
        await next();
      } finally {
        await exportMetrics().catch((error: unknown) =>
          deps.logger.warn({ err: error }, "could not export the request's metrics"),
        );
      }
    });
  }
  // First: a preflight is answered before authentication (it never carries a token),
  // and every answer, errors included, carries the CORS headers of an allowed origin.
  app.use(apiCors(deps.corsOrigins ?? []));
  app.use(requestContext(deps.logger, metrics));
  app.onError(errorHandler());
  app.notFound(() => {
    throw new WorkcellError("not_found", "No such route: see GET /openapi.json for the API.");
  });

  // Public. Registered before the authenticate middleware: Hono runs handlers in
  // registration order, and this one answers without calling next().
  registerHealthRoute(app, deps.health, metrics);
  metrics.probeDbOnScrape(deps.health.db);
  metrics.countAwaitingOnScrape((signal) => countAwaitingRuns(deps.db, signal));
  const eventTickets = deps.eventTickets ?? createEventTickets();
  const personalTokens = createPersonalTokens({
    db: deps.db,
    key: deps.personalTokenKey ?? ephemeralPersonalTokenKey(),
  });
  const rateLimiter =
    deps.rateLimiter ??
    createRequestRateLimiter({
      db: deps.db,
      defaultRequestsPerMinute: (deps.userLimitDefaults ?? DEFAULT_USER_LIMITS).requests_per_minute,
    });
  app.use(
    "/v1/*",
    authenticate(deps.auth, eventTickets, personalTokens),
    rateLimit(rateLimiter),
    limitBody(limits.maxBodyBytes),
  );
  // Before any route's validator: a non-admin, or a personal access token without the
  // route's scope, is refused whatever body it sends.
  app.use("/v1/*", requireScope());
  app.use("/v1/admin/*", requireAdmin());

  registerProjectRoutes(app, deps);
  registerThreadRoutes(app, deps);
  registerThreadRunsRoute(app, deps);
  registerRunRoutes(app, {
    ...deps,
    metrics,
    runChanges: deps.runChanges ?? recordedRunChanges(deps.db),
    limits,
  });
  registerApprovalRoutes(app, { ...deps, metrics });
  registerRunEventsRoute(app, { db: deps.db, waiter: deps.runEvents, limits });
  registerRunEventTicketRoute(app, { db: deps.db, tickets: eventTickets, limits });
  registerFilesAccessRoute(app, deps);
  registerCheckpointRoutes(app, deps);
  registerAttachmentRoutes(app, deps);
  registerSkillRoutes(app, deps);
  registerNodeRoutes(app, deps);
  registerLimitsRoutes(app, deps);
  registerUsageRoute(app, deps);
  registerTokenRoutes(app, personalTokens);
  registerNetworkRoutes(app, deps);
  registerSecretRoutes(app, deps);

  // The frames of GET /v1/runs/{id}/events carry this as JSON; no JSON route returns it,
  // so it is registered by itself (clients generate their event types from it).
  app.openAPIRegistry.register("RunEvent", runEventSchema);
  app.openAPIRegistry.registerComponent("securitySchemes", BEARER_SCHEME, {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description:
      "An OIDC token of the deployment's issuer (local mode: `npm run token -- <uid>`), or a personal access token (`wct_…`, POST /v1/tokens) limited to its scopes.",
  });
  // Public, like health: the contract a client generator or a browser fetches first.
  app.get("/openapi.json", (c) =>
    c.json(
      documentApi(
        app.getOpenAPI31Document({
          openapi: "3.1.0",
          info: { title: "Workcell API", version: "1" },
        }) as unknown as Record<string, unknown>,
        new URL(c.req.url).origin,
      ),
    ),
  );
  return app;
}
