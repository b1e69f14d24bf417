import { EventSourceParserStream } from "eventsource-parser/stream";
import { WorkcellConnectionError, WorkcellError } from "./errors.ts";
import type { components } from "./generated/api.ts";
import type { Transport } from "./transport.ts";

export type RunEvent = components["schemas"]["RunEvent"];
export type RunEventType = RunEvent["type"];

export interface RunEventsOptions {
  readonly signal?: AbortSignal;
  /** Start after this event's `seq` (what Last-Event-ID carries); default 0, the start. */
  readonly after?: number;
  /** Give up after this many reconnects in a row that brought no new event; default 8. */
  readonly maxReconnects?: number;
}

/** Waits before reconnecting: the server's `retry:` hint, doubled per failed attempt. */
const DEFAULT_RETRY_MS = 1_000;
const MAX_RETRY_MS = 15_000;
const DEFAULT_MAX_RECONNECTS = 8;

/**
 * A run's events as an async iterator, each exactly once and in order. The stream may
 * end before the run does (a server's duration limit, a proxy, a dropped connection): the
 * iterator reconnects with Last-Event-ID = the last `seq` it yielded, so nothing is lost
 * or repeated. It ends after `run.completed`, or when the run is over and every event was
 * read. Errors the server answers (404, 401) throw at once; lost connections are retried.
 */
export async function* runEvents(
  transport: Transport,
  runId: string,
  options: RunEventsOptions = {},
): AsyncGenerator<RunEvent, void, undefined> {
  let lastSeq = options.after ?? 0;
  let retryMs = DEFAULT_RETRY_MS;
  let failures = 0;
  const maxReconnects = options.maxReconnects ?? DEFAULT_MAX_RECONNECTS;
  const url = `${transport.baseUrl}/v1/runs/${encodeURIComponent(runId)}/events`;

  for (;;) {
    options.signal?.throwIfAborted();
    let progressed = false;
    try {
      const response = await transport.fetch(url, {
        headers: {
          Accept: "text/event-stream",
          ...(lastSeq > 0 ? { "Last-Event-ID": String(lastSeq) } : {}),
        },
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (response.body === null) throw new Error("the event stream has no body");
      const frames = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(
        new EventSourceParserStream({
          onRetry: (ms) => {
            retryMs = ms;
          },
        }),
      );
      for await (const frame of iterate(frames, options.signal)) {
        const event = JSON.parse(frame.data) as RunEvent;
        // The server resumes after Last-Event-ID; this guard keeps "exactly once" even
        // behind a proxy that replays.
        if (event.seq <= lastSeq) continue;
        lastSeq = event.seq;
        progressed = true;
        failures = 0;
        yield event;
        if (event.type === "run.completed") return;
      }
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      // A refusal is final; a lost connection (or a 503 while a node restarts) is retried.
      const retryable =
        error instanceof WorkcellConnectionError ||
        !(error instanceof WorkcellError) ||
        error.status >= 500;
      if (!retryable) throw error;
      failures += 1;
      if (failures > maxReconnects) throw error;
      await sleep(backoff(retryMs, failures), options.signal);
      continue;
    }
    // The stream ended without run.completed: over (a worker that died ends the run
    // without it), or cut short. Only the run's status tells which.
    if (!progressed) {
      const run = await transport.call(
        (api, init) =>
          api.GET("/v1/runs/{run_id}", { ...init, params: { path: { run_id: runId } } }),
        options.signal ? { signal: options.signal } : {},
      );
      if (["succeeded", "failed", "cancelled"].includes(run.status)) return;
      failures += 1;
      if (failures > maxReconnects) {
        throw new WorkcellConnectionError({
          code: "stream_stalled",
          status: 0,
          message: `The event stream of run ${runId} kept ending without new events while the run is ${run.status}: retry later.`,
        });
      }
      await sleep(backoff(retryMs, failures), options.signal);
    }
  }
}

function backoff(retryMs: number, failures: number): number {
  return Math.min(retryMs * 2 ** Math.max(failures - 1, 0), MAX_RETRY_MS);
}

async function* iterate<T>(stream: ReadableStream<T>, signal?: AbortSignal): AsyncGenerator<T> {
  const reader = stream.getReader();
  const cancel = () => void reader.cancel(signal?.reason).catch(() => {});
  signal?.addEventListener("abort", cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    signal?.removeEventListener("abort", cancel);
    reader.releaseLock();
    await stream.cancel().catch(() => {});
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
