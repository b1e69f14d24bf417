import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { usageSchema } from "../../shared/contracts/usage.ts";
import { DEFAULT_USER_LIMITS } from "../../shared/limits/user-limits.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import { requestOriginOf } from "../data-plane/request-origin.ts";
import { findEffectiveLimits } from "../limits/user-limits-store.ts";
import { countActiveRuns } from "../runs/count-active-runs.ts";
import { bearerSecurity, commonErrors } from "./openapi-common.ts";

const route = createRoute({
  method: "get",
  path: "/v1/usage",
  summary: "The caller's workspace usage and runs against their limits",
  description:
    "Bytes and inodes are the data plane's quota accounting for the caller's UserWorkspace (the figure its writes are checked against; at most a few seconds old, see docs/decisions/0049); runs are counted in Postgres.",
  security: bearerSecurity,
  responses: {
    200: { description: "Usage", content: { "application/json": { schema: usageSchema } } },
    ...commonErrors,
  },
});

/**
 * `GET /v1/usage` (docs/api.md "Limits and usage"). The control plane has no workspace bytes of
 * its own: it asks the data plane with a service capability for exactly this uid
 * (`workspace.usage`), in parallel with the two Postgres reads.
 */
export function registerUsageRoute(
  app: OpenAPIHono<AppEnv>,
  deps: Pick<AppDeps, "db" | "dataPlane" | "userLimitDefaults" | "tracing">,
): void {
  app.openapi(route, async (c) => {
    const { uid } = c.var.principal;
    const [workspace, runs, limits] = await Promise.all([
      deps.dataPlane.workspaceUsage(uid, c.req.raw.signal, requestOriginOf(c, deps.tracing)),
      countActiveRuns(deps.db, uid),
      findEffectiveLimits(deps.db, uid, deps.userLimitDefaults ?? DEFAULT_USER_LIMITS),
    ]);
    return c.json(
      {
        workspace_bytes: workspace.workspaceBytes,
        workspace_inodes: workspace.workspaceInodes,
        running_runs: runs.running,
        queued_runs: runs.queued,
        limits,
      },
      200,
    );
  });
}
