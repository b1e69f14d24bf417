import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import { type DatabaseRetry, retryDatabase } from "../../../shared/db/database-retry.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import type { ChangeBatch } from "../change-batch/change-batch.ts";
import { finishRun, type RunEnding } from "./finish-run.ts";
import type { RunFence } from "./run-fence.ts";

export interface RetriedEnding {
  readonly db: Db;
  readonly fence: RunFence;
  readonly threadId: string;
  readonly seq: number;
  readonly ending: RunEnding;
  /** Change batches still unrepaired when the ending was first tried. */
  readonly unrepaired: readonly ChangeBatch[];
  /**
   * Commits the kept batches again once the database answers (leased-commands.ts settle):
   * the ones it commits are recorded in full rather than as placeholders.
   */
  readonly settle?: () => Promise<readonly ChangeBatch[]>;
  readonly notifySlotsAs?: string;
  readonly retry: DatabaseRetry;
  /** The run lease: every retry that reaches the database moves it this far again. */
  readonly leaseTtlMs: number;
  readonly logger: Logger;
}

/**
 * finishRun, retried while the database does not answer (decision 0112). The run's wiring
 * (its heartbeat) has stopped by now, so a retry that reaches the database first extends
 * the lease, fenced: the sweeper sees a live lease for as long as this keeps trying, and
 * the fence failing (the sweeper or a cancel got there first) ends the retries at once.
 * An earlier try whose answer was lost may have committed: each retry first looks for
 * this attempt's own ending on the row. False when the run is not ours any more.
 */
export async function finishRunRetried(e: RetriedEnding): Promise<boolean> {
  return retryDatabase(e.retry, "run ending", e.logger, async (_signal, { failures }) => {
    if (failures === 0) {
      return finishRun(e.db, e.fence, e.threadId, e.seq, e.ending, e.unrepaired, e.notifySlotsAs);
    }
    if (await endedAsThisAttempt(e.db, e.fence, e.ending)) return true;
    if (!(await extendLease(e.db, e.fence, e.leaseTtlMs))) return false;
    const unrepaired = e.settle === undefined ? e.unrepaired : await e.settle();
    return finishRun(e.db, e.fence, e.threadId, e.seq, e.ending, unrepaired, e.notifySlotsAs);
  });
}

/** The row carries this attempt's ending (status and error code): an earlier try committed. */
export async function endedAsThisAttempt(
  db: Db,
  fence: RunFence,
  ending: RunEnding,
): Promise<boolean> {
  const [row] = await executeRows<{ status: string; attempt: number; code: string | null }>(
    db,
    sql`select status, attempt, error->>'code' as code from agent_runs where run_id = ${fence.runId}`,
  );
  return (
    row !== undefined &&
    row.attempt === fence.attempt &&
    row.status === ending.status &&
    (row.code ?? undefined) === ending.error?.code
  );
}

/** The heartbeat's UPDATE (run-lease.ts): false when the fence no longer holds. */
export async function extendLease(db: Db, fence: RunFence, leaseTtlMs: number): Promise<boolean> {
  const rows = await executeRows<{ one: number }>(
    db,
    sql`update agent_runs set lease_expires_at = now() + ${leaseTtlMs}::bigint * interval '1 millisecond'
        where run_id = ${fence.runId} and attempt = ${fence.attempt} and status = 'running'
        returning 1 as one`,
  );
  return rows.length === 1;
}
