import type { TraceContext } from "../../shared/telemetry/tracing.ts";

/** What a batch send achieved: ids that are on the queue now, and ids that are not. */
export type RunDispatchResult = {
  readonly sent: readonly string[];
  readonly failed: readonly string[];
};

/**
 * The seam to the run queue (SQS in every deployment, fauxqs locally). Publishing only
 * puts `{type: "run.dispatch", run_id}` on the queue; the run itself is already
 * committed in Postgres, so a failed send loses nothing (the dispatch sweeper retries).
 */
export interface RunQueue {
  /**
   * Throws when the message is not known to be on the queue. `trace` is the submitting
   * request's trace context: it travels in the message (W3C trace context attributes).
   */
  dispatchRun(runId: string, signal: AbortSignal, trace?: TraceContext): Promise<void>;
  /**
   * Never throws for a partial failure: each id ends up in `sent` or `failed`. `traces`
   * holds the trace context of the runs that have one (a batch of submissions).
   */
  dispatchRuns(
    runIds: readonly string[],
    signal: AbortSignal,
    traces?: ReadonlyMap<string, TraceContext>,
  ): Promise<RunDispatchResult>;
}
