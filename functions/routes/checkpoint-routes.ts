import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { and, desc, eq } from "drizzle-orm";
import {
  checkpointListSchema,
  checkpointSchema,
  createCheckpointRequestSchema,
  forkRequestSchema,
  restoreResultSchema,
} from "../../shared/contracts/checkpoint.ts";
import { checkpointView } from "../../shared/contracts/checkpoint-view.ts";
import { threadSchema } from "../../shared/contracts/thread.ts";
import { checkpoints, projects } from "../../shared/db/schema.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { newManagedWorkdirPath } from "../../shared/paths/managed-workdir-path.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import { refuseWhileProjectRuns } from "../checkpoints/active-project-run.ts";
import { createHttpCheckpointHost } from "../checkpoints/http-checkpoint-host.ts";
import { pickDataPlaneUrl } from "../data-plane/pick-data-plane-url.ts";
import { requestOriginOf } from "../data-plane/request-origin.ts";
import { threadBody } from "../threads/thread-body.ts";
import { findActiveThread, insertThread } from "../threads/thread-store.ts";
import {
  bearerSecurity,
  commonErrors,
  errorResponse,
  threadIdParams,
  uuidPathParam,
} from "./openapi-common.ts";

const checkpointParams = z.object({
  thread_id: uuidPathParam("thread_id", "Thread id"),
  checkpoint_id: uuidPathParam("checkpoint_id", "Checkpoint id"),
});
const noThread = errorResponse("No such thread (or checkpoint) for this user.");
const runActive = errorResponse("A run of the thread's project is pending or running.");
const json = <T>(schema: T) => ({ content: { "application/json": { schema } } });

const listRoute = createRoute({
  method: "get",
  path: "/v1/threads/{thread_id}/checkpoints",
  summary: "The thread's checkpoints, newest first",
  security: bearerSecurity,
  request: { params: threadIdParams },
  responses: {
    200: { description: "All of them", ...json(checkpointListSchema) },
    404: noThread,
    ...commonErrors,
  },
});
const createCheckpointRoute = createRoute({
  method: "post",
  path: "/v1/threads/{thread_id}/checkpoints",
  summary: "Checkpoint the thread's Workdir now",
  security: bearerSecurity,
  request: {
    params: threadIdParams,
    body: { ...json(createCheckpointRequestSchema), required: false },
  },
  responses: {
    201: { description: "The checkpoint", ...json(checkpointSchema) },
    404: noThread,
    409: errorResponse(
      "A command held the Workdir past the wait bound (workdir_busy): nothing was taken.",
    ),
    ...commonErrors,
  },
});
const restoreRoute = createRoute({
  method: "post",
  path: "/v1/threads/{thread_id}/checkpoints/{checkpoint_id}/restore",
  summary: "Make the Workdir exactly the checkpoint (after saving the current state)",
  security: bearerSecurity,
  request: { params: checkpointParams },
  responses: {
    200: { description: "Restored; `saved` undoes it", ...json(restoreResultSchema) },
    404: noThread,
    409: runActive,
    ...commonErrors,
  },
});
const deleteRoute = createRoute({
  method: "delete",
  path: "/v1/threads/{thread_id}/checkpoints/{checkpoint_id}",
  summary: "Delete a checkpoint",
  security: bearerSecurity,
  request: { params: checkpointParams },
  responses: { 204: { description: "Deleted" }, 404: noThread, ...commonErrors },
});
const forkRoute = createRoute({
  method: "post",
  path: "/v1/threads/{thread_id}/fork",
  summary:
    "A new thread in a new managed project, starting from a checkpoint or the current Workdir",
  security: bearerSecurity,
  request: { params: threadIdParams, body: { ...json(forkRequestSchema), required: false } },
  responses: {
    201: { description: "The new thread", ...json(threadSchema) },
    404: noThread,
    409: runActive,
    ...commonErrors,
  },
});

type CheckpointRouteDeps = Pick<
  AppDeps,
  "db" | "capabilities" | "dataPlaneUrl" | "dataPlaneRouting" | "tracing"
>;

/**
 * docs/api.md "Checkpoints". functions/ authorises from Postgres (the thread is the
 * caller's and active, the checkpoint is that thread's: anything else is 404, never 403)
 * and refuses a restore or a fork of the current Workdir while a run of the project is
 * active (a checkpoint waits for the Execution Lease on the node instead); the bytes are the node's
 * (agent-host/checkpoints/, over POST /internal/v1/checkpoints).
 */
export function registerCheckpointRoutes(
  app: OpenAPIHono<AppEnv>,
  deps: CheckpointRouteDeps,
): void {
  const host = createHttpCheckpointHost({ capabilities: deps.capabilities });

  async function thread(uid: string, threadId: string) {
    const found = await findActiveThread(deps.db, uid, threadId);
    if (found === undefined) throw new WorkcellError("not_found", "No such thread.");
    const baseUrl =
      deps.dataPlaneRouting === undefined
        ? deps.dataPlaneUrl
        : await pickDataPlaneUrl(
            deps.db,
            { uid, runtimeScopeId: found.thread.rootThreadId },
            deps.dataPlaneRouting,
            deps.dataPlaneUrl,
          );
    return { ...found, target: { uid, workdirPath: found.workdirPath, baseUrl } };
  }

  app.openapi(listRoute, async (c) => {
    const { uid } = c.var.principal;
    const { thread_id } = c.req.valid("param");
    await thread(uid, thread_id);
    const rows = await deps.db
      .select()
      .from(checkpoints)
      .where(and(eq(checkpoints.uid, uid), eq(checkpoints.threadId, thread_id)))
      .orderBy(desc(checkpoints.createdAt), desc(checkpoints.checkpointId));
    return c.json({ items: rows.map(checkpointView) }, 200);
  });

  app.openapi(createCheckpointRoute, async (c) => {
    const { uid } = c.var.principal;
    const { thread_id } = c.req.valid("param");
    const body = (c.req.valid("json") ?? {}) as { label?: string };
    const found = await thread(uid, thread_id);
    // No refusal while a run is active: the node takes the Workdir's Execution Lease
    // between the run's commands (docs/decisions/0170).
    const answer = await host.call(
      found.target,
      { thread_id, action: "take", ...(body.label === undefined ? {} : { label: body.label }) },
      c.req.raw.signal,
      requestOriginOf(c, deps.tracing),
    );
    if (answer.checkpoint === undefined)
      throw new WorkcellError("internal", "The data plane returned no checkpoint.");
    return c.json(answer.checkpoint, 201);
  });

  app.openapi(restoreRoute, async (c) => {
    const { uid } = c.var.principal;
    const { thread_id, checkpoint_id } = c.req.valid("param");
    const found = await thread(uid, thread_id);
    await refuseWhileProjectRuns(deps.db, uid, found.thread.projectId);
    const answer = await host.call(
      found.target,
      { thread_id, action: "restore", checkpoint_id },
      c.req.raw.signal,
      requestOriginOf(c, deps.tracing),
    );
    if (answer.restored === undefined || answer.saved === undefined) {
      throw new WorkcellError("internal", "The data plane returned no restore result.");
    }
    return c.json({ restored: answer.restored, saved: answer.saved }, 200);
  });

  app.openapi(deleteRoute, async (c) => {
    const { uid } = c.var.principal;
    const { thread_id, checkpoint_id } = c.req.valid("param");
    await thread(uid, thread_id);
    // The row goes now (and with it the quota it held); the node's reconciler removes the
    // directory that no row names any more.
    const deleted = await deps.db
      .delete(checkpoints)
      .where(
        and(
          eq(checkpoints.checkpointId, checkpoint_id),
          eq(checkpoints.uid, uid),
          eq(checkpoints.threadId, thread_id),
        ),
      )
      .returning({ id: checkpoints.checkpointId });
    if (deleted.length === 0) throw new WorkcellError("not_found", "No such checkpoint.");
    return c.body(null, 204);
  });

  app.openapi(forkRoute, async (c) => {
    const { uid } = c.var.principal;
    const { thread_id } = c.req.valid("param");
    const body = (c.req.valid("json") ?? {}) as { checkpoint_id?: string; title?: string };
    const found = await thread(uid, thread_id);
    if (body.checkpoint_id === undefined)
      await refuseWhileProjectRuns(deps.db, uid, found.thread.projectId);
    const forkPath = newManagedWorkdirPath();
    await host.call(
      found.target,
      {
        thread_id,
        action: "fork",
        fork_workdir_path: forkPath,
        ...(body.checkpoint_id === undefined ? {} : { checkpoint_id: body.checkpoint_id }),
      },
      c.req.raw.signal,
      requestOriginOf(c, deps.tracing),
    );
    const title = body.title ?? `Fork of ${found.thread.title ?? "a thread"}`;
    const record = await deps.db.transaction(async (tx) => {
      const [project] = await tx
        .insert(projects)
        .values({
          uid,
          name: title,
          workdirPath: forkPath,
          directoryMode: "managed",
          implicit: true,
        })
        .returning();
      if (project === undefined)
        throw new WorkcellError("internal", "The forked project was not written.");
      return insertThread(tx, { uid, project, title });
    });
    return c.json(threadBody(record), 201);
  });
}
