import { sleepResolveOnAbort } from "../../shared/async/sleep-resolve-on-abort.ts";

/**
 * How an event stream waits for a run's next events. Resolving means "look again": it
 * may be early (a notification) or late (the timeout), never a promise that events exist.
 * The stream always re-reads Postgres, so a lost notification only costs latency.
 */
export interface RunEventWaiter {
  waitForEvents(runId: string, timeoutMs: number, signal: AbortSignal): Promise<void>;
  /**
   * A watch of one run for a stream's whole life, where notifications exist (LISTEN):
   * it remembers a notification that came while the stream was reading, so after a read
   * the stream can wait at once instead of reading again to find nothing.
   */
  watch?(runId: string): RunEventWatch;
}

/** One stream's subscription to its run's notifications (RunEventWaiter.watch). */
export interface RunEventWatch {
  /**
   * Resolves `notified` at once if a notification came since the last wait resolved (or
   * since the watch began), else on the next one; `timeout` after `timeoutMs` or an
   * abort. Reading right after it resolves sees every event notified before it did.
   */
  wait(timeoutMs: number, signal: AbortSignal): Promise<"notified" | "timeout">;
  /**
   * True while a notification is sure to wake the watch (the LISTEN is up): the stream's
   * fallback re-read may then back off further (AppLimits.eventPollNotifiedMaxMs).
   */
  listening(): boolean;
  close(): void;
}

/**
 * Bounded polling: the runtime-independent fallback (Lambda, Workers), where a
 * connection that outlives the request cannot hold a LISTEN.
 */
export function createPollingRunEventWaiter(): RunEventWaiter {
  return { waitForEvents: (_runId, timeoutMs, signal) => sleepResolveOnAbort(timeoutMs, signal) };
}
