import { type SQL, sql } from "drizzle-orm";
import type { DbTransaction } from "../db/client.ts";
import { executePreparedStatement, prepareStatement } from "../db/execute-prepared-rows.ts";

/**
 * Namespace of the execution-tree lock, single-bigint form (the two-int key space belongs
 * to the migrator, the sandbox store and the dispatch sweeper; agent-host/skills hashes its
 * own namespaced strings the same way, so keys of the two subsystems differ by
 * construction).
 */
export const TREE_LOCK_NAMESPACE = "workcell.runs.tree:";

/**
 * One lock per (uid, runtime scope): the scope's execution trees and their sandbox.
 * Claims of the scope's runs (agent-host/runs/claim/claim-waiting-run.ts), the tree cleanup's decision "is another run of the
 * scope running? then keep the sandbox, else this generation goes" (tree-cleanup.ts) and
 * the sweeps that end a lost node's runs and release their sandbox
 * (end-scope-node-lost.ts: expired leases, lost nodes, a restarted node's leftovers) all
 * hold it, so every claim is ordered against each such decision:
 *
 * - the claim commits first: the cleanup sees the run running and keeps the sandbox
 *   (`kept`); the run's own root cleans up when it ends;
 * - the claim commits after, and the cleanup kept the sandbox warm (marked released in
 *   the deciding transaction): the claimed run takes it and clears the mark;
 * - the claim commits after, and the generation is doomed. The destroy runs right
 *   after the deciding transaction, outside this lock (tree-cleanup.ts says why), and
 *   the sandbox manager refuses new uses of a generation being destroyed, so the
 *   claimed run acquires a new generation, or at worst (another agent-host process on
 *   the same node, within one round trip) ends `stale_generation`. It never executes in
 *   a destroyed sandbox.
 *
 * Here in shared/ because the run worker and the control plane's sweeper must take the
 * same key.
 *
 * The uid is an arbitrary string and may contain ':'; the scope is a uuid and never does,
 * so the last ':' separates them and no two pairs render the same text.
 */
export function treeLockKey(uid: string, runtimeScopeId: string): SQL {
  return sql`hashtextextended(${`${TREE_LOCK_NAMESPACE}${uid}:${runtimeScopeId}`}, 0)`;
}

/**
 * The same key as treeLockKey, as a named statement: every claim and every tree cleanup
 * takes it, so it is parsed and planned once per connection (docs/decisions/0183).
 */
const LOCK_TREE = prepareStatement(
  "lock_tree",
  sql`select pg_advisory_xact_lock(hashtextextended(${sql.placeholder("key")}::text, 0))`,
);

export async function lockTree(
  tx: DbTransaction,
  uid: string,
  runtimeScopeId: string,
): Promise<void> {
  await executePreparedStatement(tx, LOCK_TREE, {
    key: `${TREE_LOCK_NAMESPACE}${uid}:${runtimeScopeId}`,
  });
}
