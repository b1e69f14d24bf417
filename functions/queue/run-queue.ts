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
  /** Throws when the message is not known to be on the queue. */
  dispatchRun(runId: string, signal: AbortSignal): Promise<void>;
  /** Never throws for a partial failure: each id ends up in `sent` or `failed`. */
  dispatchRuns(runIds: readonly string[], signal: AbortSignal): Promise<RunDispatchResult>;
}
