import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { approvalBody } from "../../shared/approvals/approval-body.ts";
import {
  adminApprovalPolicySchema,
  approvalDecisionSchema,
  approvalListSchema,
  approvalParamsSchema,
  approvalSchema,
  userApprovalPolicySchema,
} from "../../shared/contracts/approval.ts";
import { uidSchema } from "../../shared/contracts/common.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import { findApprovalPolicy, putApprovalPolicy } from "../approvals/approval-policy-store.ts";
import { decideApproval, listApprovals } from "../approvals/approval-store.ts";
import {
  bearerSecurity,
  commonErrors,
  errorResponse,
  runIdParams,
  uuidPathParam,
} from "./openapi-common.ts";

const listRoute = createRoute({
  method: "get",
  path: "/v1/runs/{run_id}/approvals",
  summary: "A run's approvals (pending and decided)",
  security: bearerSecurity,
  request: { params: runIdParams },
  responses: {
    200: {
      description: "The run's approvals, oldest first",
      content: { "application/json": { schema: approvalListSchema } },
    },
    404: errorResponse("No such run for this user."),
    ...commonErrors,
  },
});

const decideParams = approvalParamsSchema.extend({
  run_id: uuidPathParam("run_id", "Run id"),
  approval_id: uuidPathParam("approval_id", "Approval id"),
});

const decideRoute = createRoute({
  method: "post",
  path: "/v1/runs/{run_id}/approvals/{approval_id}",
  summary: "Approve or deny a pending approval (once); the run resumes on any node",
  security: bearerSecurity,
  request: {
    params: decideParams,
    body: { content: { "application/json": { schema: approvalDecisionSchema } }, required: true },
  },
  responses: {
    200: {
      description: "The decided approval",
      content: { "application/json": { schema: approvalSchema } },
    },
    400: errorResponse("Bad body."),
    404: errorResponse("No such run or approval for this user."),
    409: errorResponse("Already decided or expired (approval_decided)."),
    ...commonErrors,
  },
});

const uidParams = z.object({ uid: uidSchema.openapi({ param: { name: "uid", in: "path" } }) });

const adminAnswer = {
  200: {
    description: "The user's approval policy",
    content: { "application/json": { schema: adminApprovalPolicySchema } },
  },
  403: errorResponse("The caller is not an admin."),
  ...commonErrors,
};

const getAdminPolicy = createRoute({
  method: "get",
  path: "/v1/admin/users/{uid}/approvals",
  summary: "A user's approval policy (admin only)",
  security: bearerSecurity,
  request: { params: uidParams },
  responses: adminAnswer,
});

const putAdminPolicy = createRoute({
  method: "put",
  path: "/v1/admin/users/{uid}/approvals",
  summary: "Set a user's approval policy (admin only); runs cannot loosen it",
  security: bearerSecurity,
  request: {
    params: uidParams,
    body: { content: { "application/json": { schema: userApprovalPolicySchema } }, required: true },
  },
  responses: { ...adminAnswer, 400: errorResponse("Bad body.") },
});

export type ApprovalRoutesDeps = Pick<AppDeps, "db"> & {
  readonly metrics: Pick<WorkcellMetrics, "approvalDecisions">;
};

/**
 * docs/api.md "Approvals": list a run's approvals, decide one, and the admin's per-user
 * policy (the admin check is the `/v1/admin/*` middleware, app.ts).
 */
export function registerApprovalRoutes(app: OpenAPIHono<AppEnv>, deps: ApprovalRoutesDeps): void {
  const adminBody = async (uid: string) => ({
    uid,
    policy: await findApprovalPolicy(deps.db, uid),
  });
  app.openapi(getAdminPolicy, async (c) => c.json(await adminBody(c.req.valid("param").uid), 200));
  app.openapi(putAdminPolicy, async (c) => {
    const { uid } = c.req.valid("param");
    await putApprovalPolicy(deps.db, uid, c.req.valid("json"));
    return c.json(await adminBody(uid), 200);
  });
  app.openapi(listRoute, async (c) => {
    const rows = await listApprovals(deps.db, c.var.principal.uid, c.req.valid("param").run_id);
    if (rows === undefined) throw new WorkcellError("not_found", "No such run.");
    return c.json({ items: rows.map(approvalBody) }, 200);
  });
  app.openapi(decideRoute, async (c) => {
    const { run_id: runId, approval_id: approvalId } = c.req.valid("param");
    const decided = await decideApproval(
      deps.db,
      c.var.principal.uid,
      { runId, approvalId },
      c.req.valid("json"),
    );
    deps.metrics.approvalDecisions.inc({ status: decided.status });
    c.var.logger.info(
      { run_id: runId, approval_id: approvalId, status: decided.status },
      "approval decided",
    );
    // Committed: a tool approval's run is already in line and the nodes were woken in the
    // same transaction (no queue message, decision 0173); a network approval's run never
    // stopped, its worker sees the decision (decision 0137).
    return c.json(approvalBody(decided), 200);
  });
}
