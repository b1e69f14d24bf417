import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import {
  runCancelRequestSchema,
  runCancelResponseSchema,
  runChangeListSchema,
  runChangesQuerySchema,
  runSchema,
  runSubmitRequestSchema,
  runSubmitResponseSchema,
  threadRunSubmitRequestSchema,
} from "../../shared/contracts/run.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { NO_NETWORK } from "../../shared/network/network-policy.ts";
import { injectTrace, noTracing } from "../../shared/telemetry/tracing.ts";
import type { AppDeps } from "../app-deps.ts";
import type { AppEnv } from "../app-env.ts";
import type { AppLimits } from "../app-limits.ts";
import { idempotencyHeadersSchema } from "../idempotency/idempotency-key.ts";
import { threadCreatingBodyHook } from "../middleware/validation-hook.ts";
import { checkRunNetwork } from "../network/check-run-network.ts";
import { cancelRun } from "../runs/cancel-run.ts";
import { runBody } from "../runs/run-body.ts";
import type { RunChangesSource } from "../runs/run-changes.ts";
import { findRun } from "../runs/run-store.ts";
import { type SubmitRunInput, submitRun } from "../runs/submit-run.ts";
import { threadBody } from "../threads/thread-body.ts";
import {
  bearerSecurity,
  commonErrors,
  errorResponse,
  runIdParams,
  threadIdParams,
} from "./openapi-common.ts";

const submitThreadRun = createRoute({
  method: "post",
  path: "/v1/threads/{thread_id}/runs",
  summary: "Start a run in a thread",
  description:
    "Message, request and run are committed in one transaction, then the run is put on the run queue.",
  security: bearerSecurity,
  request: {
    params: threadIdParams,
    headers: idempotencyHeadersSchema,
    body: {
      content: { "application/json": { schema: threadRunSubmitRequestSchema } },
      required: true,
    },
  },
  responses: {
    202: { description: "The pending run", content: { "application/json": { schema: runSchema } } },
    400: errorResponse("Bad body."),
    404: errorResponse("No such thread for this user."),
    409: errorResponse("Idempotency-Key reused with another body."),
    413: errorResponse("Body too large."),
    422: errorResponse(
      "agent.network.allow outside the user's network policy (network_not_allowed).",
    ),
    ...commonErrors,
  },
});

const submitRunRoute = createRoute({
  method: "post",
  path: "/v1/runs",
  summary: "Start a run in a new thread (and, without project_id, a new implicit project)",
  security: bearerSecurity,
  request: {
    headers: idempotencyHeadersSchema,
    body: { content: { "application/json": { schema: runSubmitRequestSchema } }, required: true },
  },
  responses: {
    202: {
      description: "The pending run and its new thread",
      content: { "application/json": { schema: runSubmitResponseSchema } },
    },
    400: errorResponse("Bad body."),
    404: errorResponse("project_id names nothing of yours."),
    409: errorResponse("Idempotency-Key reused with another body."),
    413: errorResponse("Body too large."),
    422: errorResponse(
      "workdir_path given (a thread takes its Workdir from its project), or agent.network.allow outside the user's network policy (network_not_allowed).",
    ),
    ...commonErrors,
  },
});

const getRun = createRoute({
  method: "get",
  path: "/v1/runs/{run_id}",
  summary: "One run",
  security: bearerSecurity,
  request: { params: runIdParams },
  responses: {
    200: { description: "The run", content: { "application/json": { schema: runSchema } } },
    404: errorResponse("No such run for this user."),
    ...commonErrors,
  },
});

const cancelRunRoute = createRoute({
  method: "post",
  path: "/v1/runs/{run_id}/cancel",
  summary: "Cancel a run (idempotent)",
  security: bearerSecurity,
  request: {
    params: runIdParams,
    body: { content: { "application/json": { schema: runCancelRequestSchema } } },
  },
  responses: {
    202: {
      description: "Cancellation requested (a pending run is cancelled at once)",
      content: { "application/json": { schema: runCancelResponseSchema } },
    },
    404: errorResponse("No such run for this user."),
    409: errorResponse("The run already finished."),
    ...commonErrors,
  },
});

const listChanges = createRoute({
  method: "get",
  path: "/v1/runs/{run_id}/changes",
  summary: "Files the run changed in its Workdir",
  description:
    "The union of the run's change batches (one per command, docs/decisions/0014); `?batch=` gives one command's batch. `truncated` is true whenever the list may be incomplete.",
  security: bearerSecurity,
  request: { params: runIdParams, query: runChangesQuerySchema },
  responses: {
    200: {
      description: "Changed files",
      content: { "application/json": { schema: runChangeListSchema } },
    },
    404: errorResponse("No such run for this user, or no such batch of the run."),
    ...commonErrors,
  },
});

export type RunRouteDeps = Pick<
  AppDeps,
  "db" | "runQueue" | "logger" | "tracing" | "networkDefault"
> & {
  runChanges: RunChangesSource;
  limits: Pick<
    AppLimits,
    "queueSendTimeoutMs" | "maxQueuedRunsPerUid" | "queuedRunsRetryAfterSeconds"
  >;
  metrics: WorkcellMetrics;
};

export function registerRunRoutes(app: OpenAPIHono<AppEnv>, deps: RunRouteDeps): void {
  const tracing = deps.tracing ?? noTracing();
  const submitDeps = (logger: AppDeps["logger"]) => ({
    db: deps.db,
    runQueue: deps.runQueue,
    logger,
    queueSendTimeoutMs: deps.limits.queueSendTimeoutMs,
    maxQueuedRuns: deps.limits.maxQueuedRunsPerUid,
    queuedRunsRetryAfterSeconds: deps.limits.queuedRunsRetryAfterSeconds,
    metrics: deps.metrics,
  });
  /** What both submit routes hand submitRun besides the target. */
  const submission = (
    vars: AppEnv["Variables"],
    body: { readonly input: string; readonly agent?: SubmitRunInput["agent"] },
    idempotencyKey: string | undefined,
  ): Omit<SubmitRunInput, "target"> => ({
    uid: vars.principal.uid,
    input: body.input,
    agent: body.agent,
    idempotencyKey,
    trace: vars.trace,
    traceCarrier: injectTrace(tracing, vars.trace),
    originRequestId: vars.requestId,
  });

  const checkNetwork = (uid: string, agent: SubmitRunInput["agent"]) =>
    checkRunNetwork(deps.db, uid, agent, deps.networkDefault ?? NO_NETWORK);

  app.openapi(submitThreadRun, async (c) => {
    const body = c.req.valid("json");
    await checkNetwork(c.var.principal.uid, body.agent);
    const { run } = await submitRun(submitDeps(c.var.logger), {
      ...submission(c.var, body, c.req.valid("header")["idempotency-key"]),
      target: { kind: "thread", threadId: c.req.valid("param").thread_id },
    });
    return c.json(runBody(run), 202);
  });

  app.openapi(
    submitRunRoute,
    async (c) => {
      const body = c.req.valid("json");
      await checkNetwork(c.var.principal.uid, body.agent);
      const { run, thread } = await submitRun(submitDeps(c.var.logger), {
        ...submission(c.var, body, c.req.valid("header")["idempotency-key"]),
        target: {
          kind: "new_thread",
          ...(body.project_id === undefined ? {} : { projectId: body.project_id }),
          ...(body.title === undefined ? {} : { title: body.title }),
        },
      });
      if (thread === undefined)
        throw new Error("a run in a new thread came back without its thread");
      return c.json({ run: runBody(run), thread: threadBody(thread) }, 202);
    },
    threadCreatingBodyHook,
  );

  app.openapi(getRun, async (c) => {
    const run = await findRun(deps.db, c.var.principal.uid, c.req.valid("param").run_id);
    if (run === undefined) throw new WorkcellError("not_found", "No such run.");
    return c.json(runBody(run), 200);
  });

  app.openapi(cancelRunRoute, async (c) => {
    const { run, ended } = await cancelRun(
      deps.db,
      c.var.principal.uid,
      c.req.valid("param").run_id,
    );
    deps.metrics.runCancelRequests.inc();
    // A pending run ends here, not in a worker: its terminal status is counted here too.
    if (ended) deps.metrics.runs.inc({ status: "cancelled" });
    c.var.logger.info({ run_id: run.runId, cancelled_now: ended }, "run cancel requested");
    return c.json(runBody(run), 202);
  });

  app.openapi(listChanges, async (c) => {
    const run = await findRun(deps.db, c.var.principal.uid, c.req.valid("param").run_id);
    if (run === undefined) throw new WorkcellError("not_found", "No such run.");
    const { batch } = c.req.valid("query");
    const changes = await deps.runChanges.listChanges(
      run,
      c.req.raw.signal,
      batch === undefined ? {} : { batchId: batch },
    );
    if (changes === undefined) throw new WorkcellError("not_found", "No such batch of this run.");
    return c.json(changes, 200);
  });
}
