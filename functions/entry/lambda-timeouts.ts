// The Lambda functions' time budgets, in one place: sst.config.ts sets each function's
// timeout from these, and the entries size their own work to fit inside.

/**
 * How long one event stream stays open on the streaming API before it ends cleanly and the
 * client resumes with Last-Event-ID. Each open stream holds one Lambda instance (one
 * concurrency unit, billed while open, polling Postgres), so it is minutes, not the
 * 15-minute maximum: a reconnect every 5 minutes costs one request.
 */
export const LAMBDA_EVENT_STREAM_MAX_MS = 5 * 60_000;
/** Buffered mode (API Gateway, `sst dev`): API Gateway gives up at 29 s, so end before. */
export const LAMBDA_BUFFERED_EVENT_STREAM_MAX_MS = 20_000;
/**
 * The API function: the stream window plus 30 s for the last poll, the terminal frame and
 * the flush. Ordinary requests end long before (each Postgres/SQS/S3 call has its own timeout).
 */
export const API_TIMEOUT_SECONDS = LAMBDA_EVENT_STREAM_MAX_MS / 1000 + 30;
/** One sweep's budget (sweeper.ts); the schedule is every minute. */
export const SWEEP_BUDGET_MS = 50_000;
/** The sweeper: its budget plus 10 s to log and close; less than its 1-minute period. */
export const SWEEPER_TIMEOUT_SECONDS = SWEEP_BUDGET_MS / 1000 + 10;
/** What the migrator may spend waiting for another migrator's lock and applying. */
export const MIGRATE_BUDGET_MS = 4 * 60_000;
/** The one-off migrator run by each deploy: its budget plus a minute to connect and report. */
export const MIGRATOR_TIMEOUT_SECONDS = MIGRATE_BUDGET_MS / 1000 + 60;
/**
 * The node drainer: the drain budget (WORKCELL_NODE_DRAIN_MINUTES, at most 14) plus a
 * minute to complete the lifecycle action and log; at most Lambda's 15 minutes.
 */
export function nodeDrainerTimeoutSeconds(drainBudgetSeconds: number): number {
  return Math.min(drainBudgetSeconds + 60, 900);
}
