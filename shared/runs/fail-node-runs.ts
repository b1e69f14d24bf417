import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { agentRuns } from "../db/schema.ts";
import { type ExpiredScope, endScopeNodeLost } from "./end-scope-node-lost.ts";

/**
 * A (re)starting agent-host ends the runs its previous process left `running`
 * (`failed/node_lost`, as the sweeper would once their leases ran out) before its
 * reconciler looks at containers. One daemon per node id (the `nodes` row), so every
 * run still owned by this node id belonged to a process that is gone. Their scopes'
 * sandbox rows are released with them, so the reconciler removes those containers
 * instead of adopting them: a dead run's processes are never the next turn's sandbox.
 */
export async function failRunsOfNode(db: Db, nodeId: string): Promise<ExpiredScope[]> {
  const mine = eq(agentRuns.ownerNode, nodeId);
  const affected = await db
    .selectDistinct({ uid: agentRuns.uid, runtimeScopeId: agentRuns.runtimeScopeId })
    .from(agentRuns)
    .where(and(eq(agentRuns.status, "running"), mine));
  const scopes: ExpiredScope[] = [];
  for (const scope of affected) {
    const ended = await db.transaction((tx) => endScopeNodeLost(tx, scope, mine));
    if (ended !== undefined) scopes.push(ended);
  }
  return scopes;
}
