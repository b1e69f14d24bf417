import { type SQL, sql } from "drizzle-orm";
import type { DbTransaction } from "../../../shared/db/client.ts";

/** Namespace of the per-uid slot lock (single-bigint key space, like the tree lock). */
export const UID_SLOT_LOCK_NAMESPACE = "workcell.runs.uid-slots:";

function uidSlotLockKey(uid: string): SQL {
  return sql`hashtextextended(${`${UID_SLOT_LOCK_NAMESPACE}${uid}`}, 0)`;
}

/**
 * Serialises the claims of one uid across all nodes, so "count the uid's running root runs,
 * then claim one more if under max_concurrent_runs" cannot be interleaved by two claimers
 * (each would see room for one and together pass the limit). Taken before the tree lock,
 * and nothing takes it after the tree lock, so the two never deadlock.
 */
export async function lockUidSlots(tx: DbTransaction, uid: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${uidSlotLockKey(uid)})`);
}
