import type { Logger } from "pino";
import { abortable } from "../async/abortable.ts";
import { isTransientDatabaseError } from "./transient-database-error.ts";

/**
 * How a run's own last writes (its events, change batches and ending) wait for a database
 * that stopped answering (decision 0112): each attempt is bounded, the delay between them
 * grows to `maxDelayMs`, and the whole wait to `giveUpAfterMs` (the fence decides earlier:
 * a write that finds the run no longer ours stops at once).
 */
export interface DatabaseRetry {
  readonly attemptTimeoutMs: number;
  readonly maxDelayMs: number;
  readonly giveUpAfterMs: number;
}

/**
 * The default policy: 5 s per attempt, attempts at most 2 s apart, and a wait longer than a
 * PostgreSQL restart or failover (while nobody reaches the database the sweeper cannot
 * decide either, so waiting costs a run nothing but a slot).
 */
export const DEFAULT_DATABASE_RETRY: DatabaseRetry = {
  attemptTimeoutMs: 5_000,
  maxDelayMs: 2_000,
  giveUpAfterMs: 10 * 60_000,
};

/** The delay before attempt `n` (1-based) after a failure: 100 ms doubling, capped, jittered. */
function delayBefore(n: number, maxDelayMs: number): number {
  const ceiling = Math.min(maxDelayMs, 100 * 2 ** Math.min(n - 1, 16));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

export interface RetryState {
  /** Failed attempts so far (0 on the first). */
  readonly failures: number;
}

/**
 * Runs `attempt` until it settles with something other than a transient database error.
 * `attempt` gets the attempt's signal (it is also abandoned when that aborts: a statement
 * that hangs on a frozen connection is not waited for) and the failures so far, so it can
 * check first whether an earlier attempt's lost answer had in fact committed. Rethrows the
 * last transient error once `giveUpAfterMs` has passed since the first failure.
 */
export async function retryDatabase<T>(
  retry: DatabaseRetry,
  what: string,
  logger: Logger,
  attempt: (signal: AbortSignal, state: RetryState) => Promise<T>,
): Promise<T> {
  let failures = 0;
  let firstFailureAt: number | undefined;
  for (;;) {
    const signal = AbortSignal.timeout(retry.attemptTimeoutMs);
    try {
      return await abortable(attempt(signal, { failures }), signal, what);
    } catch (error) {
      if (!isTransientDatabaseError(error)) throw error;
      failures += 1;
      firstFailureAt ??= performance.now();
      const waited = performance.now() - firstFailureAt;
      if (waited >= retry.giveUpAfterMs) {
        logger.error(
          { err: error, attempts: failures, waited_ms: Math.round(waited) },
          `${what}: the database did not answer; giving up`,
        );
        throw error;
      }
      // The first failure and then every tenth: an outage is visible, not a flood.
      if (failures === 1 || failures % 10 === 0) {
        logger.warn(
          { err: error, attempts: failures },
          `${what}: the database did not answer; retrying`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, delayBefore(failures, retry.maxDelayMs)));
    }
  }
}
