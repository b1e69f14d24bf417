import { sql } from "drizzle-orm";
import type { DbTransaction } from "../../../shared/db/client.ts";
import {
  executePreparedStatement,
  prepareStatement,
} from "../../../shared/db/execute-prepared-rows.ts";

/** Namespace of the per-uid slot lock (single-bigint key space, like the tree lock). */
export const UID_SLOT_LOCK_NAMESPACE = "workcell.runs.uid-slots:";

/** Every claim takes it: a named statement, parsed and planned once per connection (0183). */
const LOCK_UID_SLOTS = prepareStatement(
  "lock_uid_slots",
  sql`select pg_advisory_xact_lock(hashtextextended(${sql.placeholder("key")}::text, 0))`,
);

/**
 * Serialises the claims of one uid across all nodes, so "count the uid's running root runs,
 * then claim one more if under max_concurrent_runs" cannot be interleaved by two claimers
 * (each would see room for one and together pass the limit). Taken before the tree lock,
 * and nothing takes it after the tree lock, so the two never deadlock.
 */
export async function lockUidSlots(tx: DbTransaction, uid: string): Promise<void> {
  await executePreparedStatement(tx, LOCK_UID_SLOTS, { key: `${UID_SLOT_LOCK_NAMESPACE}${uid}` });
}
