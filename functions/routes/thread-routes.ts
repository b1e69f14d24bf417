import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { pageQuerySchema } from "../../shared/contracts/common.ts";
import {
  type Thread,
  threadCreateRequestSchema,
  threadPageSchema,
  threadSchema,
} from "../../shared/contracts/thread.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import { idempotencyHeadersSchema } from "../idempotency/idempotency-key.ts";
import { idempotencyScope } from "../idempotency/idempotency-scope.ts";
import { runIdempotent } from "../idempotency/idempotent-transaction.ts";
import { threadCreatingBodyHook } from "../middleware/validation-hook.ts";
import { createThreadIn } from "../threads/create-thread.ts";
import { deleteThread } from "../threads/delete-thread.ts";
import { threadBody } from "../threads/thread-body.ts";
import { decodeThreadCursor, encodeThreadCursor } from "../threads/thread-cursor.ts";
import { findActiveThread, listThreads } from "../threads/thread-store.ts";
import { bearerSecurity, commonErrors, errorResponse, threadIdParams } from "./openapi-common.ts";

const createThread = createRoute({
  method: "post",
  path: "/v1/threads",
  summary: "Create a thread (and, without project_id, an implicit managed project)",
  security: bearerSecurity,
  request: {
    headers: idempotencyHeadersSchema,
    body: { content: { "application/json": { schema: threadCreateRequestSchema } } },
  },
  responses: {
    201: { description: "The thread", content: { "application/json": { schema: threadSchema } } },
    400: errorResponse("Bad body."),
    404: errorResponse("project_id or parent_thread_id names nothing of yours."),
    409: errorResponse("Idempotency-Key reused with another body."),
    413: errorResponse("Body too large."),
    422: errorResponse("workdir_path given, or a child naming another project than its parent's."),
    ...commonErrors,
  },
});

const listThreadsRoute = createRoute({
  method: "get",
  path: "/v1/threads",
  summary: "The caller's threads, newest first, cursor-paged",
  security: bearerSecurity,
  request: { query: pageQuerySchema },
  responses: {
    200: { description: "One page", content: { "application/json": { schema: threadPageSchema } } },
    400: errorResponse("Bad cursor or limit."),
    ...commonErrors,
  },
});

const getThread = createRoute({
  method: "get",
  path: "/v1/threads/{thread_id}",
  summary: "One thread",
  security: bearerSecurity,
  request: { params: threadIdParams },
  responses: {
    200: { description: "The thread", content: { "application/json": { schema: threadSchema } } },
    404: errorResponse("No such thread for this user (deleted threads too)."),
    ...commonErrors,
  },
});

const deleteThreadRoute = createRoute({
  method: "delete",
  path: "/v1/threads/{thread_id}",
  summary: "Soft-delete a thread",
  security: bearerSecurity,
  request: { params: threadIdParams },
  responses: {
    204: { description: "Deleted" },
    404: errorResponse("No such thread for this user."),
    409: errorResponse("A run of the thread is active."),
    ...commonErrors,
  },
});

export function registerThreadRoutes(app: OpenAPIHono<AppEnv>, deps: Pick<AppDeps, "db">): void {
  app.openapi(
    createThread,
    async (c) => {
      const { uid } = c.var.principal;
      const body = c.req.valid("json");
      const scope = await idempotencyScope({
        uid,
        key: c.req.valid("header")["idempotency-key"],
        method: "POST",
        path: "/v1/threads",
        body,
      });
      const response = await runIdempotent(deps.db, scope, async (tx) => ({
        status: 201,
        body: threadBody(await createThreadIn(tx, uid, body)),
      }));
      return c.json(response.body as Thread, 201);
    },
    threadCreatingBodyHook,
  );

  app.openapi(listThreadsRoute, async (c) => {
    const query = c.req.valid("query");
    const after = query.cursor === undefined ? undefined : decodeThreadCursor(query.cursor);
    const page = await listThreads(deps.db, c.var.principal.uid, after, query.limit);
    return c.json(
      {
        items: page.items.map(threadBody),
        next_cursor: page.next === undefined ? null : encodeThreadCursor(page.next),
      },
      200,
    );
  });

  app.openapi(getThread, async (c) => {
    const found = await findActiveThread(
      deps.db,
      c.var.principal.uid,
      c.req.valid("param").thread_id,
    );
    if (found === undefined) throw new WorkcellError("not_found", "No such thread.");
    return c.json(threadBody(found), 200);
  });

  app.openapi(deleteThreadRoute, async (c) => {
    await deleteThread(deps.db, c.var.principal.uid, c.req.valid("param").thread_id);
    return c.body(null, 204);
  });
}
