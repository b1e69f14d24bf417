import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { Logger } from "pino";
import { isTerminalRunStatus } from "../../shared/contracts/run.ts";
import type { Db } from "../../shared/db/client.ts";
import { agentRuns, runEvents } from "../../shared/db/schema.ts";
import type { AppLimits } from "../app-limits.ts";
import type { RunEventWaiter } from "./run-event-waiter.ts";
import { KEEP_ALIVE_FRAME, retryFrame, runEventFrame } from "./sse-frame.ts";

/** The event that ends a stream (shared/contracts/run-event.ts). */
const TERMINAL_EVENT_TYPE = "run.completed";
/** EventSource reconnect delay we suggest when a stream ends early (max duration). */
export const SSE_RECONNECT_MS = 1_000;

export type RunEventStreamDeps = {
  readonly db: Db;
  readonly waiter: RunEventWaiter;
  readonly logger: Logger;
  readonly limits: Pick<
    AppLimits,
    | "eventPollMinMs"
    | "eventPollMaxMs"
    | "eventPollNotifiedMaxMs"
    | "eventKeepAliveMs"
    | "eventStreamMaxMs"
    | "eventBatchSize"
  >;
};

export type RunEventStreamRequest = {
  readonly uid: string;
  readonly runId: string;
  /** Resume after this sequence (Last-Event-ID); 0 from the start. */
  readonly afterSeq: number;
  /** The client's request: aborts when it disconnects. */
  readonly signal: AbortSignal;
  /** Called once when the stream is over: closed, failed or cancelled by the client. */
  readonly onEnd?: () => void;
};

/**
 * The SSE body of GET /v1/runs/{id}/events, pulled by the client (so a slow reader
 * applies backpressure to our reads). Reads `run_events` after the last sent sequence;
 * when there is nothing new, waits (NOTIFY or bounded polling with backoff) and looks
 * again. Ends after `run.completed`, or when the run is terminal and every event was
 * sent (a worker that died before writing its last event must not hang the client), or
 * after eventStreamMaxMs (the client resumes with Last-Event-ID). Sequences are gap-free
 * (shared/db/schema/run-events.ts), so "after the last sent seq" never skips an event.
 */
export function runEventStream(
  deps: RunEventStreamDeps,
  request: RunEventStreamRequest,
): ReadableStream<Uint8Array> {
  const stop = new AbortController();
  const signal = AbortSignal.any([request.signal, stop.signal]);
  const encoder = new TextEncoder();
  const { limits } = deps;
  const deadline = Date.now() + limits.eventStreamMaxMs;
  let lastSeq = request.afterSeq;
  let pollMs = limits.eventPollMinMs;
  let lastSentAt = Date.now();
  let started = false;
  let finished = false;
  let runIsTerminal = false;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    watch?.close();
    request.onEnd?.();
  };

  // Both reads are prepared once per stream with placeholders: each is run many times
  // per stream (every wake), and as named statements each connection parses and plans
  // them once and runs them in one round trip instead of drizzle rendering them anew and
  // postgres.js sending them unnamed in two (docs/decisions/0087, 0183).
  const eventsAfter = deps.db
    .select()
    .from(runEvents)
    .where(
      and(
        eq(runEvents.runId, sql.placeholder("runId")),
        eq(runEvents.uid, sql.placeholder("uid")),
        gt(runEvents.seq, sql.placeholder("afterSeq")),
      ),
    )
    .orderBy(asc(runEvents.seq))
    .limit(sql.placeholder("limit"))
    .prepare("run_events_after");
  const statusOf = deps.db
    .select({ status: agentRuns.status })
    .from(agentRuns)
    .where(
      and(eq(agentRuns.runId, sql.placeholder("runId")), eq(agentRuns.uid, sql.placeholder("uid"))),
    )
    .prepare("run_status");
  const readEvents = () =>
    eventsAfter.execute({
      runId: request.runId,
      uid: request.uid,
      afterSeq: lastSeq,
      limit: limits.eventBatchSize,
    });

  const readStatus = async () => {
    const [row] = await statusOf.execute({ runId: request.runId, uid: request.uid });
    return row?.status;
  };

  // With a watch, a notification that came during a read is remembered: after a read
  // with events the stream waits at once (no read that finds nothing), and the run's
  // status, the fallback for a worker that died without its terminal event, is read only
  // after a wait that timed out. Without one (polling), every wake reads both.
  const watch = deps.waiter.watch?.(request.runId);
  let mustRead = true;
  let checkStatus = true;

  // With LISTEN up a NOTIFY wakes the stream: the timed re-read is only the fallback for
  // a lost notification or a worker that died without its terminal event, so it backs off
  // further (decision 0159). Without it, polling is how events arrive.
  const pollCeilingMs = () =>
    watch?.listening() === true ? limits.eventPollNotifiedMaxMs : limits.eventPollMaxMs;

  const wait = async (waitMs: number) => {
    if (watch === undefined) {
      await deps.waiter.waitForEvents(request.runId, waitMs, signal);
      checkStatus = true;
    } else if ((await watch.wait(waitMs, signal)) === "timeout") checkStatus = true;
  };

  /** The next chunk to send, or undefined when the stream is over. */
  const next = async (): Promise<string | undefined> => {
    if (!started) {
      started = true;
      return retryFrame(SSE_RECONNECT_MS);
    }
    while (!finished && !signal.aborted && Date.now() < deadline) {
      if (!mustRead) {
        const idleMs = Date.now() - lastSentAt;
        if (idleMs >= limits.eventKeepAliveMs) {
          lastSentAt = Date.now();
          return KEEP_ALIVE_FRAME;
        }
        const waitMs = Math.min(pollMs, limits.eventKeepAliveMs - idleMs, deadline - Date.now());
        await wait(Math.max(waitMs, 0));
        pollMs = Math.min(pollMs * 2, pollCeilingMs());
        if (signal.aborted) break;
      }
      mustRead = false;
      const rows = await readEvents();
      if (rows.length > 0) {
        lastSeq = rows[rows.length - 1]?.seq ?? lastSeq;
        pollMs = limits.eventPollMinMs;
        lastSentAt = Date.now();
        if (rows.some((row) => row.type === TERMINAL_EVENT_TYPE)) finished = true;
        // Polling cannot know whether more came meanwhile: it looks again at once.
        mustRead = watch === undefined;
        return rows.map(runEventFrame).join("");
      }
      if (runIsTerminal) return undefined;
      if (!checkStatus) continue;
      checkStatus = false;
      const status = await readStatus();
      if (status === undefined) return undefined;
      if (isTerminalRunStatus(status)) {
        // Events are committed no later than the status: read once more, then end.
        runIsTerminal = true;
        mustRead = true;
      }
    }
    return undefined;
  };

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await next();
        if (chunk === undefined) {
          end();
          controller.close();
        } else controller.enqueue(encoder.encode(chunk));
      } catch (error) {
        if (signal.aborted) {
          // The client went away (or cancelled the body): the wait or read it was in is
          // aborted on purpose. That is how every stream of a closed tab ends, not an error.
          deps.logger.debug({ run_id: request.runId }, "run event stream closed by the client");
        } else {
          // Headers are long sent: end the stream cleanly; the client resumes with
          // Last-Event-ID. The error stays in our log, never in the stream.
          deps.logger.error({ err: error, run_id: request.runId }, "run event stream failed");
        }
        end();
        closeQuietly(controller);
      }
    },
    cancel() {
      stop.abort();
      end();
    },
  });
}

/** Closing a stream the client already cancelled throws; there is nobody left to tell. */
function closeQuietly(controller: ReadableStreamDefaultController<Uint8Array>): void {
  try {
    controller.close();
  } catch {
    // already closed or cancelled
  }
}
