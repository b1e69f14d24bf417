import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { adminNodeListSchema, nodeIdParamSchema } from "../../shared/contracts/node.ts";
import { adminRuntimeListSchema } from "../../shared/contracts/node-runtime.ts";
import type { Db } from "../../shared/db/client.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { DEFAULT_NODE_TTL_MS } from "../../shared/runs/node-liveness.ts";
import type { AppEnv } from "../app-env.ts";
import { listNodeRuntimes, listNodes, setNodeState } from "../nodes/node-store.ts";
import { bearerSecurity, commonErrors, errorResponse } from "./openapi-common.ts";

const list = createRoute({
  method: "get",
  path: "/v1/admin/nodes",
  summary: "Admin: every agent-host node with its state, heartbeat, tiers and load",
  security: bearerSecurity,
  responses: {
    200: { description: "Nodes", content: { "application/json": { schema: adminNodeListSchema } } },
    403: errorResponse("The caller is not an admin."),
    ...commonErrors,
  },
});

const runtime = createRoute({
  method: "get",
  path: "/v1/admin/runtime",
  summary: "Admin: per node, each sandbox tier's readiness and each Runtime Asset's",
  security: bearerSecurity,
  responses: {
    200: {
      description: "Runtime reports, one per node",
      content: { "application/json": { schema: adminRuntimeListSchema } },
    },
    403: errorResponse("The caller is not an admin."),
    ...commonErrors,
  },
});

const stateRoute = (action: "quiesce" | "resume", summary: string) =>
  createRoute({
    method: "post",
    path: `/v1/admin/nodes/{node_id}/${action}`,
    summary,
    security: bearerSecurity,
    request: { params: nodeIdParamSchema },
    responses: {
      202: { description: "Accepted: the node follows at its next heartbeat" },
      403: errorResponse("The caller is not an admin."),
      404: errorResponse("No such node."),
      ...commonErrors,
    },
  });

const quiesce = stateRoute("quiesce", "Admin: the node takes no new sandboxes and drains");
const resume = stateRoute("resume", "Admin: the node takes sandboxes again");

export type NodeRoutesDeps = { db: Db; nodeTtlMs?: number };

/** docs/api.md "Nodes and runtimes"; requireAdmin (app.ts) guards `/v1/admin/*`. */
export function registerNodeRoutes(app: OpenAPIHono<AppEnv>, deps: NodeRoutesDeps): void {
  const ttl = deps.nodeTtlMs ?? DEFAULT_NODE_TTL_MS;
  app.openapi(list, async (c) => c.json({ items: await listNodes(deps.db, ttl) }, 200));
  app.openapi(runtime, async (c) => c.json({ items: await listNodeRuntimes(deps.db, ttl) }, 200));
  for (const [route, state] of [
    [quiesce, "quiesced"],
    [resume, "active"],
  ] as const) {
    app.openapi(route, async (c) => {
      const { node_id } = c.req.valid("param");
      if (!(await setNodeState(deps.db, node_id, state))) {
        throw new WorkcellError("not_found", "No node with this id: see GET /v1/admin/nodes.");
      }
      c.var.logger.info({ node_id, state }, "node state set by an admin");
      return c.body(null, 202);
    });
  }
}
