import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import { type DatabaseRetry, retryDatabase } from "../../../shared/db/database-retry.ts";
import { finishRun, type RunEnding } from "./finish-run.ts";
import { endedAsThisAttempt, extendLease } from "./finish-run-retried.ts";
import { nextEventSeq } from "./run-event-log.ts";
import type { RunFence } from "./run-fence.ts";

export interface RetriedCrash {
  readonly db: Db;
  readonly fence: RunFence;
  readonly threadId: string;
  readonly ending: RunEnding;
  readonly notifySlotsAs?: string;
  readonly retry: DatabaseRetry;
  /** The run lease: every retry that reaches the database moves it this far again. */
  readonly leaseTtlMs: number;
  readonly logger: Logger;
}

/**
 * A crashed run's ending, retried while the database does not answer (decision 0169), as
 * a completed run's is (finish-run-retried.ts): a crash during an outage (its cause is
 * often the outage) is written once the database is back, instead of leaving the run to
 * the lease expiry and the sweeper's `node_lost`. Each attempt is bounded and abandoned at
 * its signal (retryDatabase). Idempotent: a retry first looks for this attempt's own ending
 * (an earlier try whose answer was lost had committed: nothing more is written), then
 * extends the lease (fenced: the sweeper or a cancel got there first ends the retries),
 * then reads the next event seq afresh and writes the ending under the fence. False when
 * the run is not ours any more.
 */
export async function recordCrashRetried(c: RetriedCrash): Promise<boolean> {
  return retryDatabase(c.retry, "run crash record", c.logger, async (_signal, { failures }) => {
    if (failures > 0) {
      if (await endedAsThisAttempt(c.db, c.fence, c.ending)) return true;
      if (!(await extendLease(c.db, c.fence, c.leaseTtlMs))) return false;
    }
    const seq = await nextEventSeq(c.db, c.fence.runId);
    return finishRun(c.db, c.fence, c.threadId, seq, c.ending, [], c.notifySlotsAs);
  });
}
