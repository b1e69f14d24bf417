import { sleepResolveOnAbort } from "../../shared/async/sleep-resolve-on-abort.ts";

/**
 * How an event stream waits for a run's next events. Resolving means "look again": it
 * may be early (a notification) or late (the timeout), never a promise that events exist.
 * The stream always re-reads Postgres, so a lost notification only costs latency.
 */
export interface RunEventWaiter {
  waitForEvents(runId: string, timeoutMs: number, signal: AbortSignal): Promise<void>;
}

/**
 * Bounded polling: the runtime-independent fallback (Lambda, Workers), where a
 * connection that outlives the request cannot hold a LISTEN.
 */
export function createPollingRunEventWaiter(): RunEventWaiter {
  return { waitForEvents: (_runId, timeoutMs, signal) => sleepResolveOnAbort(timeoutMs, signal) };
}
