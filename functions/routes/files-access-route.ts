import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import {
  filesAccessRequestSchema,
  filesAccessResponseSchema,
} from "../../shared/contracts/files-access.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { DEFAULT_USER_LIMITS } from "../../shared/limits/user-limits.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import { pickDataPlaneUrl } from "../data-plane/pick-data-plane-url.ts";
import { isoTime } from "../db/iso-time.ts";
import { findEffectiveLimits } from "../limits/user-limits-store.ts";
import { findActiveThread } from "../threads/thread-store.ts";
import { bearerSecurity, commonErrors, errorResponse, threadIdParams } from "./openapi-common.ts";

const route = createRoute({
  method: "post",
  path: "/v1/threads/{thread_id}/files/access",
  summary: "A short-lived data-plane capability scoped to the thread's Workdir",
  description:
    "Call `<base_url>/dp/v1/...` with `Authorization: Bearer <token>` to list, read, write or delete files of the Workdir (the operations asked for, nothing else).",
  security: bearerSecurity,
  request: {
    params: threadIdParams,
    body: { content: { "application/json": { schema: filesAccessRequestSchema } }, required: true },
  },
  responses: {
    200: {
      description: "The capability",
      content: { "application/json": { schema: filesAccessResponseSchema } },
    },
    400: errorResponse("Bad body."),
    404: errorResponse("No such thread for this user."),
    ...commonErrors,
  },
});

/**
 * Authorization happens here, from Postgres (the thread is the caller's and active); the
 * decision travels as a capability naming uid, Workdir and operations, which is all the
 * data plane trusts (docs/architecture.md §1). Not idempotent on purpose: replaying an old
 * token could hand out one that has already expired.
 */
export function registerFilesAccessRoute(
  app: OpenAPIHono<AppEnv>,
  deps: Pick<
    AppDeps,
    "db" | "capabilities" | "dataPlaneUrl" | "dataPlaneRouting" | "userLimitDefaults"
  >,
): void {
  app.openapi(route, async (c) => {
    const { uid } = c.var.principal;
    const found = await findActiveThread(deps.db, uid, c.req.valid("param").thread_id);
    if (found === undefined) throw new WorkcellError("not_found", "No such thread.");
    const limits = await findEffectiveLimits(
      deps.db,
      uid,
      deps.userLimitDefaults ?? DEFAULT_USER_LIMITS,
    );
    const minted = await deps.capabilities.mint(
      {
        uid,
        workdirPath: found.workdirPath,
        ops: c.req.valid("json").ops,
        // Revoked by the data plane once this thread is deleted (docs/decisions/0051).
        threadId: found.thread.threadId,
        // The data plane enforces the quota from the capability: it needs no database.
        quota: {
          workspace_bytes: limits.workspace_bytes,
          workspace_inodes: limits.workspace_inodes,
        },
      },
      c.req.raw.signal,
    );
    // With DATA_PLANE_ROUTING=nodes, a live node's own URL (the thread's sandbox node
    // first), so a lost node does not break file access to threads others can serve.
    const baseUrl =
      deps.dataPlaneRouting === undefined
        ? deps.dataPlaneUrl
        : await pickDataPlaneUrl(
            deps.db,
            { uid, runtimeScopeId: found.thread.rootThreadId },
            deps.dataPlaneRouting,
            deps.dataPlaneUrl,
          );
    return c.json(
      { base_url: baseUrl, token: minted.token, expires_at: isoTime(minted.expiresAt) },
      200,
    );
  });
}
