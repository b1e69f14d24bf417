import { Hono } from "hono";
import { z } from "zod";
import { MAX_UID_CHARS } from "../../../shared/contracts/common.ts";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { limitBody } from "../../../shared/http/body-limit.ts";
import type { WorkspaceQuotaAccounting } from "../../quota/workspace-quota.ts";
import type { DataPlaneEnv } from "../data-plane-env.ts";
import type { DataPlaneLimits } from "../data-plane-limits.ts";
import {
  authenticateService,
  readServiceBody,
  requireSameUid,
  requireServiceOp,
  type ServiceAuthDeps,
  type ServiceRoutesEnv,
} from "../service-capability-auth.ts";

export const WORKSPACE_USAGE_PATH = "/internal/v1/usage";

export const workspaceUsageBodySchema = z.object({
  uid: z.string().min(1).max(MAX_UID_CHARS).describe("The user; must be the capability's uid."),
});

export type UsageInternalRouteDeps = ServiceAuthDeps & {
  readonly limits: DataPlaneLimits;
  /** The node's quota accounting; without it the route answers 503. */
  readonly quota: WorkspaceQuotaAccounting | undefined;
};

/**
 * `POST /internal/v1/usage` `{uid}` (service op `workspace.usage`) → 200
 * `{workspace_bytes, workspace_inodes}`: the uid's UserWorkspace as this node's quota
 * accounting sees it (the figure data-plane writes are checked against; at most
 * maxUsageAgeMs old plus this node's own writes since, docs/decisions/0049). A UserWorkspace
 * that does not exist yet is 0 bytes, 0 inodes. Only a service capability naming this uid
 * opens it: the body repeats the uid and any other one is 403 `capability_scope`.
 */
export function registerUsageInternalRoute(
  app: Hono<DataPlaneEnv>,
  deps: UsageInternalRouteDeps,
): void {
  const routes = new Hono<ServiceRoutesEnv>();
  routes.use("*", authenticateService(deps));
  routes.post("/", limitBody<ServiceRoutesEnv>(deps.limits.maxJsonBodyBytes), async (c) => {
    const claims = requireServiceOp(c, "workspace.usage");
    if (deps.quota === undefined) {
      throw new WorkcellError(
        "unavailable",
        "This agent-host's data plane keeps no quota accounting: pass `quota` (createAccountingQuota) to createDataPlaneApp.",
      );
    }
    const body = await readServiceBody(c, workspaceUsageBodySchema, '{"uid": "..."}');
    requireSameUid(body.uid, claims);
    const used = await deps.quota.usage(body.uid, c.req.raw.signal);
    return c.json({ workspace_bytes: used.bytes, workspace_inodes: used.inodes }, 200);
  });
  app.route(WORKSPACE_USAGE_PATH, routes);
}
