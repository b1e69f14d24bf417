import { and, eq, lt, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { agentRuns } from "../db/schema.ts";
import { type ExpiredScope, endScopeNodeLost } from "./end-scope-node-lost.ts";

export { type ExpiredScope, NODE_LOST_ERROR } from "./end-scope-node-lost.ts";

/** Scopes (uid, runtime scope) with expired runs examined per call; the next call takes the rest. */
export const MAX_EXPIRED_RUNS_PER_SWEEP = 500;

/**
 * Ends every running run whose lease expired before `now` (its worker died or lost the
 * database for a whole lease): status `failed` with `{code: "node_lost"}` and its terminal
 * `run.completed` event. The control plane's sweep calls it (functions/runs/sweep-runs.ts;
 * it uses only shared/ and drizzle, so it runs wherever functions/ runs); `now` defaults to
 * the database clock, which is also what leases are written with. An aborted `signal`
 * stops between scopes: each scope is its own transaction, so what is left is simply the
 * next call's.
 *
 * Why not retry the run instead: its tools have side effects. A dead worker may have
 * written files, started processes or half-finished a sub-agent; running the task again
 * from the start would repeat those effects (append twice, send twice) without the user
 * knowing. Failing it with a clear code lets the user look at the Workdir and decide.
 *
 * The sandbox: see endScopeNodeLost (released unless a run of the scope still runs on
 * the sandbox's node). A lost node's remaining sandbox rows are released by
 * failLostNodes (fail-lost-nodes.ts), whatever its runs did.
 *
 * Fencing: each run is re-checked FOR UPDATE under the lock (a heartbeat that extended the
 * lease meanwhile wins), and the worker's own writes are conditional on `running`, so a
 * worker that was only slow writes nothing more once this committed.
 */
export async function failExpiredLeases(
  db: Db,
  now?: Date,
  signal?: AbortSignal,
): Promise<ExpiredScope[]> {
  const cutoff: SQL = now === undefined ? sql`now()` : sql`${now.toISOString()}::timestamptz`;
  const expired = await db
    .selectDistinct({ uid: agentRuns.uid, runtimeScopeId: agentRuns.runtimeScopeId })
    .from(agentRuns)
    .where(and(eq(agentRuns.status, "running"), lt(agentRuns.leaseExpiresAt, cutoff)))
    .limit(MAX_EXPIRED_RUNS_PER_SWEEP);

  const scopes: ExpiredScope[] = [];
  for (const scope of expired) {
    if (signal?.aborted) break;
    const ended = await db.transaction((tx) =>
      endScopeNodeLost(tx, scope, lt(agentRuns.leaseExpiresAt, cutoff)),
    );
    if (ended !== undefined) scopes.push(ended);
  }
  return scopes;
}
