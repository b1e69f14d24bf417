import { createParser } from "eventsource-parser";
import { ConsoleApiError } from "./console-api.ts";
import type { Transport } from "./http-transport.ts";
import type { RunEvent } from "./types.ts";

/** Pause before reconnecting a dropped stream (doubles up to the max). */
export const STREAM_RETRY_MIN_MS = 500;
export const STREAM_RETRY_MAX_MS = 8_000;

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done, fail) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        fail(signal.reason);
      },
      { once: true },
    );
  });
}

/**
 * GET /v1/runs/{id}/events as an async iterator: each event once, in order; a dropped
 * connection reconnects with `Last-Event-ID` = the last seq seen, so nothing is lost or
 * repeated. Ends after `run.completed`; an answer other than a stream (404, 401) throws.
 */
export async function* runEventStream(
  t: Transport,
  token: () => Promise<string>,
  runId: string,
  afterSeq: number,
  signal: AbortSignal,
): AsyncGenerator<RunEvent> {
  let last = afterSeq;
  let retryMs = STREAM_RETRY_MIN_MS;
  for (;;) {
    const headers: Record<string, string> = {
      authorization: `Bearer ${await token()}`,
      accept: "text/event-stream",
    };
    if (last > 0) headers["last-event-id"] = String(last);
    let res: Response;
    try {
      res = await t.raw(t.apiUrl(`/v1/runs/${runId}/events`), { headers, signal });
    } catch (error) {
      if (signal.aborted || !(error instanceof ConsoleApiError) || error.code !== "network") {
        throw error;
      }
      await pause(retryMs, signal);
      retryMs = Math.min(retryMs * 2, STREAM_RETRY_MAX_MS);
      continue;
    }
    const queue: RunEvent[] = [];
    const parser = createParser({
      onEvent(message) {
        queue.push(JSON.parse(message.data) as RunEvent);
      },
    });
    const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const chunk = await reader?.read();
        if (chunk === undefined || chunk.done) break;
        parser.feed(chunk.value);
        while (queue.length > 0) {
          const event = queue.shift() as RunEvent;
          if (event.seq <= last) continue;
          last = event.seq;
          retryMs = STREAM_RETRY_MIN_MS;
          yield event;
          if (event.type === "run.completed") return;
        }
      }
    } catch (error) {
      if (signal.aborted) throw error;
      // A connection dropped mid-stream: reconnect below and resume after `last`.
    } finally {
      reader?.cancel().catch(() => {});
    }
    await pause(retryMs, signal);
    retryMs = Math.min(retryMs * 2, STREAM_RETRY_MAX_MS);
  }
}
