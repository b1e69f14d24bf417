import { type SQL, sql } from "drizzle-orm";
import type { DbTransaction } from "../db/client.ts";

/**
 * Namespace of the execution-tree lock, single-bigint form (the two-int key space belongs
 * to the migrator, the sandbox store and the dispatch sweeper; agent-host/skills hashes its
 * own namespaced strings the same way, so keys of the two subsystems differ by
 * construction).
 */
export const TREE_LOCK_NAMESPACE = "workcell.runs.tree:";

/**
 * One lock per (uid, runtime scope): the scope's execution trees and their sandbox.
 * Claims of the scope's runs, the tree cleanup's "anything still active? then destroy"
 * and the expired-lease sweep all hold it, so a run can never be claimed between the
 * cleanup's check and its destroy (it would start on a sandbox about to vanish). Here in
 * shared/ because the run worker and the control plane's sweeper must take the same key.
 *
 * The uid is an arbitrary string and may contain ':'; the scope is a uuid and never does,
 * so the last ':' separates them and no two pairs render the same text.
 */
export function treeLockKey(uid: string, runtimeScopeId: string): SQL {
  return sql`hashtextextended(${`${TREE_LOCK_NAMESPACE}${uid}:${runtimeScopeId}`}, 0)`;
}

export async function lockTree(
  tx: DbTransaction,
  uid: string,
  runtimeScopeId: string,
): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(${treeLockKey(uid, runtimeScopeId)})`);
}
