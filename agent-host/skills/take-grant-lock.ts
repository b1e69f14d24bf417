import { sql } from "drizzle-orm";
import { untilAborted } from "../../shared/async/until-aborted.ts";
import type { DbTransaction } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";
import { grantLockKey } from "./skill-locks.ts";

/**
 * Takes the uid's grant lock for the rest of `tx` (bounded by the transaction's
 * lock_timeout, and by `stop`). It tries first, then waits: a refresh that finds a grant
 * change in progress says so (`onBusy`, a test and tracing seam), then queues behind it
 * and, once it has the lock, reads the grants that change committed.
 */
export async function takeGrantLock(
  tx: DbTransaction,
  uid: string,
  stop: AbortSignal,
  onBusy?: (uid: string) => void | Promise<void>,
): Promise<void> {
  const [free] = await untilAborted(
    executeRows<{ locked: boolean }>(
      tx,
      sql`select pg_try_advisory_xact_lock(${grantLockKey(uid)}) as locked`,
    ),
    stop,
  );
  if (free?.locked === true) return;
  await onBusy?.(uid);
  await untilAborted(tx.execute(sql`select pg_advisory_xact_lock(${grantLockKey(uid)})`), stop);
}
