import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { nodes } from "../db/schema/nodes.ts";
import { agentRuns, sandboxes } from "../db/schema.ts";
import { type ExpiredScope, endScopeNodeLost } from "./end-scope-node-lost.ts";
import { nodeIsLost } from "./node-liveness.ts";

/** Scopes examined per call; the next call takes the rest. */
export const MAX_LOST_NODE_SCOPES_PER_SWEEP = 500;

export interface LostNodesSweep {
  /** Scopes whose runs on a lost node were ended `failed/node_lost`. */
  readonly scopes: readonly ExpiredScope[];
  /** Sandbox rows of lost nodes marked `failed` (their node's reconciler removes them). */
  readonly releasedSandboxes: readonly {
    readonly sandboxId: string;
    readonly generation: number;
    readonly nodeId: string;
  }[];
}

/**
 * The node half of the sweep (docs/architecture.md §10): for every node that is lost (no
 * heartbeat for `nodeTtlMs`, or stopped), ends its running runs `failed/node_lost` and
 * releases ALL of its live sandbox rows, whatever else runs in those scopes, so that the
 * scopes' next runs get a new generation on a live node instead of being handed back
 * for a sandbox nobody serves. Runs do not wait for their own lease to run out: the node
 * TTL decides for all of them at once.
 *
 * Lost is re-checked inside each transaction (the subquery), so a node that beat again
 * in between keeps its runs. A sandbox row some transaction holds (a create in flight on
 * the node, if it is still half-alive) is skipped and taken by the next sweep.
 */
export async function failLostNodes(
  db: Db,
  nodeTtlMs: number,
  signal?: AbortSignal,
): Promise<LostNodesSweep> {
  const lostNodes = db.select({ nodeId: nodes.nodeId }).from(nodes).where(nodeIsLost(nodeTtlMs));
  const onLostNode = inArray(agentRuns.ownerNode, lostNodes);
  const affected = await db
    .selectDistinct({ uid: agentRuns.uid, runtimeScopeId: agentRuns.runtimeScopeId })
    .from(agentRuns)
    .where(and(eq(agentRuns.status, "running"), onLostNode))
    .limit(MAX_LOST_NODE_SCOPES_PER_SWEEP);

  const scopes: ExpiredScope[] = [];
  for (const scope of affected) {
    if (signal?.aborted) break;
    const ended = await db.transaction((tx) => endScopeNodeLost(tx, scope, onLostNode));
    if (ended !== undefined) scopes.push(ended);
  }
  if (signal?.aborted) return { scopes, releasedSandboxes: [] };

  const held = db
    .select({ sandboxId: sandboxes.sandboxId })
    .from(sandboxes)
    .where(
      and(
        inArray(sandboxes.state, ["running", "destroying"]),
        inArray(sandboxes.nodeId, lostNodes),
      ),
    )
    .for("update", { skipLocked: true });
  const releasedSandboxes = await db
    .update(sandboxes)
    .set({ state: "failed", updatedAt: sql`now()` })
    .where(
      and(inArray(sandboxes.sandboxId, held), inArray(sandboxes.state, ["running", "destroying"])),
    )
    .returning({
      sandboxId: sandboxes.sandboxId,
      generation: sandboxes.generation,
      nodeId: sandboxes.nodeId,
    });
  return { scopes, releasedSandboxes };
}
