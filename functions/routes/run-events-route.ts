import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { AppEnv } from "../app-env.ts";
import type { AppLimits } from "../app-limits.ts";
import { closeEventStreamSlot, openEventStreamSlot } from "../limits/event-stream-slots.ts";
import { LAST_EVENT_ID_HEADER, parseLastEventId } from "../run-events/last-event-id.ts";
import { type RunEventStreamDeps, runEventStream } from "../run-events/run-event-stream.ts";
import { findRun } from "../runs/run-store.ts";
import { bearerSecurity, commonErrors, errorResponse, runIdParams } from "./openapi-common.ts";

/** A slot outlives the longest stream by this much before it lapses (a dead instance's). */
const STREAM_SLOT_MARGIN_MS = 60_000;
const STREAM_RETRY_AFTER_SECONDS = 5;

const route = createRoute({
  method: "get",
  path: "/v1/runs/{run_id}/events",
  summary: "The run's events as Server-Sent Events",
  description: `Each SSE frame has \`id\` = the event's seq, \`event\` = its type and \`data\` = a RunEvent as JSON. Send \`${LAST_EVENT_ID_HEADER}\` to resume after an event. The stream ends after \`run.completed\`; it may also end earlier (duration limit): reconnect with ${LAST_EVENT_ID_HEADER}.`,
  security: bearerSecurity,
  request: { params: runIdParams },
  responses: {
    200: {
      description: "The event stream",
      content: {
        "text/event-stream": {
          schema: z.string().describe("SSE frames whose data is a RunEvent (see components)."),
        },
      },
    },
    400: errorResponse(`Malformed ${LAST_EVENT_ID_HEADER}.`),
    404: errorResponse("No such run for this user."),
    ...commonErrors,
  },
});

export type RunEventsRouteDeps = Omit<RunEventStreamDeps, "logger" | "limits"> & {
  readonly limits: RunEventStreamDeps["limits"] &
    Pick<AppLimits, "maxEventStreamsPerUid" | "eventStreamMaxMs">;
};

export function registerRunEventsRoute(app: OpenAPIHono<AppEnv>, deps: RunEventsRouteDeps): void {
  app.openapi(route, async (c) => {
    const { uid } = c.var.principal;
    const runId = c.req.valid("param").run_id;
    const afterSeq = parseLastEventId(c.req.header(LAST_EVENT_ID_HEADER));
    if ((await findRun(deps.db, uid, runId)) === undefined) {
      throw new WorkcellError("not_found", "No such run.");
    }
    const slot = await openEventStreamSlot(
      deps.db,
      uid,
      deps.limits.maxEventStreamsPerUid,
      deps.limits.eventStreamMaxMs + STREAM_SLOT_MARGIN_MS,
    );
    if (slot === undefined) {
      throw domainError("event_streams_limit", {
        details: {
          max_event_streams: deps.limits.maxEventStreamsPerUid,
          retry_after_seconds: STREAM_RETRY_AFTER_SECONDS,
        },
      });
    }
    const log = c.var.logger;
    const body = runEventStream(
      { ...deps, logger: log },
      {
        uid,
        runId,
        afterSeq,
        signal: c.req.raw.signal,
        onEnd: () => {
          closeEventStreamSlot(deps.db, uid, slot).catch((error: unknown) => {
            log.warn({ err: error }, "could not free an event-stream slot; it lapses by itself");
          });
        },
      },
    );
    return new Response(body, {
      status: 200,
      headers: {
        "Content-Type": "text/event-stream; charset=utf-8",
        "Cache-Control": "no-cache, no-transform",
        // nginx and similar proxies buffer responses unless told not to.
        "X-Accel-Buffering": "no",
        "X-Request-Id": c.var.requestId,
      },
    });
  });
}
