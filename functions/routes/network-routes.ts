import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { uidSchema } from "../../shared/contracts/common.ts";
import {
  adminNetworkPolicySchema,
  effectiveNetworkSchema,
  runNetworkListSchema,
} from "../../shared/contracts/network.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import {
  type NetworkPolicy,
  NO_NETWORK,
  networkPolicySchema,
} from "../../shared/network/network-policy.ts";
import {
  findNetworkCeiling,
  findNetworkOverride,
  putNetworkOverride,
} from "../../shared/network/network-policy-store.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import { listRunNetwork } from "../network/run-network-store.ts";
import { findRun } from "../runs/run-store.ts";
import { bearerSecurity, commonErrors, errorResponse, runIdParams } from "./openapi-common.ts";

const uidParams = z.object({ uid: uidSchema.openapi({ param: { name: "uid", in: "path" } }) });

const adminAnswer = {
  200: {
    description: "The user's network ceiling",
    content: { "application/json": { schema: adminNetworkPolicySchema } },
  },
  403: errorResponse("The caller is not an admin."),
  ...commonErrors,
};

const getAdminNetwork = createRoute({
  method: "get",
  path: "/v1/admin/users/{uid}/network",
  summary: "A user's network ceiling (admin only)",
  security: bearerSecurity,
  request: { params: uidParams },
  responses: adminAnswer,
});

const putAdminNetwork = createRoute({
  method: "put",
  path: "/v1/admin/users/{uid}/network",
  summary: "Set a user's network ceiling (admin only); applies to the user's next connection",
  security: bearerSecurity,
  request: {
    params: uidParams,
    body: { content: { "application/json": { schema: networkPolicySchema } }, required: true },
  },
  responses: { ...adminAnswer, 400: errorResponse("Bad body (a pattern that is not a host).") },
});

const getNetwork = createRoute({
  method: "get",
  path: "/v1/network",
  summary: "The caller's network policy in force",
  security: bearerSecurity,
  responses: {
    200: {
      description: "The policy",
      content: { "application/json": { schema: effectiveNetworkSchema } },
    },
    ...commonErrors,
  },
});

const getRunNetwork = createRoute({
  method: "get",
  path: "/v1/runs/{run_id}/network",
  summary: "The connections a run's sandbox asked for, allowed and refused",
  security: bearerSecurity,
  request: { params: runIdParams },
  responses: {
    200: {
      description: "The run's connections",
      content: { "application/json": { schema: runNetworkListSchema } },
    },
    404: errorResponse("No such run for this user."),
    ...commonErrors,
  },
});

/** A policy as the wire schema types it (a fresh array: policies are frozen in memory). */
function wire(policy: NetworkPolicy) {
  return { mode: policy.mode, allow: [...policy.allow] };
}

export type NetworkRoutesDeps = Pick<AppDeps, "db"> & {
  /** The deployment's default ceiling (WORKCELL_NETWORK_DEFAULT_ALLOW); default `none`. */
  readonly networkDefault?: NetworkPolicy;
};

/**
 * docs/api.md "Network policy and secrets": the admin's per-user ceiling, the caller's policy,
 * a run's audit rows. The admin check is the `/v1/admin/*` middleware (app.ts).
 */
export function registerNetworkRoutes(app: OpenAPIHono<AppEnv>, deps: NetworkRoutesDeps): void {
  const fallback = deps.networkDefault ?? NO_NETWORK;
  const adminBody = async (uid: string) => {
    const own = await findNetworkOverride(deps.db, uid);
    const source = own === undefined ? "default" : "user";
    return { uid, policy: wire(own ?? fallback), source } as const;
  };
  app.openapi(getAdminNetwork, async (c) => c.json(await adminBody(c.req.valid("param").uid), 200));
  app.openapi(putAdminNetwork, async (c) => {
    const { uid } = c.req.valid("param");
    await putNetworkOverride(deps.db, uid, c.req.valid("json"));
    return c.json(await adminBody(uid), 200);
  });
  app.openapi(getNetwork, async (c) => {
    const policy = await findNetworkCeiling(deps.db, c.var.principal.uid, fallback);
    return c.json({ policy: wire(policy), changed_by: "admin" as const }, 200);
  });
  app.openapi(getRunNetwork, async (c) => {
    const { uid } = c.var.principal;
    const run = await findRun(deps.db, uid, c.req.valid("param").run_id);
    if (run === undefined) throw new WorkcellError("not_found", "No such run.");
    return c.json(await listRunNetwork(deps.db, uid, run.runId), 200);
  });
}
