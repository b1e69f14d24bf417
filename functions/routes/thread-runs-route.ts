import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { MAX_THREAD_RUNS, threadRunListSchema } from "../../shared/contracts/thread-runs.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import { listThreadRuns } from "../runs/list-thread-runs.ts";
import { runBody } from "../runs/run-body.ts";
import { findActiveThread } from "../threads/thread-store.ts";
import { bearerSecurity, commonErrors, errorResponse, threadIdParams } from "./openapi-common.ts";

const listThreadRunsRoute = createRoute({
  method: "get",
  path: "/v1/threads/{thread_id}/runs",
  summary: "A thread's runs with their inputs (the conversation history)",
  description:
    "Oldest first, the newest runs only (see `truncated`). Each run's replies and tool calls are its events (GET /v1/runs/{run_id}/events replays them). docs/decisions/0023-thread-history.md.",
  security: bearerSecurity,
  request: { params: threadIdParams },
  responses: {
    200: {
      description: "The runs",
      content: { "application/json": { schema: threadRunListSchema } },
    },
    404: errorResponse("No such thread for this user (deleted threads too)."),
    ...commonErrors,
  },
});

export function registerThreadRunsRoute(app: OpenAPIHono<AppEnv>, deps: Pick<AppDeps, "db">): void {
  app.openapi(listThreadRunsRoute, async (c) => {
    const { uid } = c.var.principal;
    const threadId = c.req.valid("param").thread_id;
    if ((await findActiveThread(deps.db, uid, threadId)) === undefined) {
      throw new WorkcellError("not_found", "No such thread.");
    }
    const page = await listThreadRuns(deps.db, uid, threadId, MAX_THREAD_RUNS);
    return c.json(
      {
        items: page.rows.map((row) => ({ ...runBody(row), input: row.input })),
        truncated: page.truncated,
      },
      200,
    );
  });
}
