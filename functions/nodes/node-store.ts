import { asc, eq, sql } from "drizzle-orm";
import type { AdminNode } from "../../shared/contracts/node.ts";
import {
  type AdminNodeRuntime,
  storedNodeRuntimeSchema,
} from "../../shared/contracts/node-runtime.ts";
import type { Db } from "../../shared/db/client.ts";
import { type NodeState, nodes } from "../../shared/db/schema/nodes.ts";
import { nodeIsLost } from "../../shared/runs/node-liveness.ts";
import { isoTime } from "../db/iso-time.ts";

/** What both admin listings read of a node: who, its state, whether it is lost by the TTL. */
function nodeColumns(nodeTtlMs: number) {
  return {
    nodeId: nodes.nodeId,
    state: nodes.state,
    lost: sql<boolean>`${nodeIsLost(nodeTtlMs)}`,
    heartbeatAt: nodes.heartbeatAt,
    sandboxTiers: nodes.sandboxTiers,
  };
}

/** Every node as operators see it (docs/api.md "Nodes and runtimes"), lost derived from the TTL. */
export async function listNodes(db: Db, nodeTtlMs: number): Promise<AdminNode[]> {
  const rows = await db
    .select({
      ...nodeColumns(nodeTtlMs),
      liveSandboxes: nodes.liveSandboxes,
      runningRuns: nodes.runningRuns,
    })
    .from(nodes)
    .orderBy(asc(nodes.nodeId));
  return rows.map((r) => ({
    node_id: r.nodeId,
    state: r.lost ? "lost" : r.state,
    heartbeat_at: isoTime(r.heartbeatAt),
    sandbox_tiers: r.sandboxTiers,
    live_sandboxes: r.liveSandboxes,
    running_runs: r.runningRuns,
  }));
}

/**
 * Every node's runtime report (docs/api.md `GET /v1/admin/runtime`) as the node wrote it. A
 * tier is ready only if its preflight passed and the last heartbeat still found it
 * answering (a Docker engine that went away since start reads as not ready); a row the
 * node never wrote, or one this code cannot read, is `unknown`, never a guess.
 */
export async function listNodeRuntimes(db: Db, nodeTtlMs: number): Promise<AdminNodeRuntime[]> {
  const rows = await db
    .select({ ...nodeColumns(nodeTtlMs), runtime: nodes.runtime })
    .from(nodes)
    .orderBy(asc(nodes.nodeId));
  return rows.map((r) => {
    const stored = storedNodeRuntimeSchema.safeParse(r.runtime);
    const runtime = stored.success ? stored.data : undefined;
    const live = new Set(r.sandboxTiers);
    return {
      node_id: r.nodeId,
      state: r.lost ? "lost" : r.state,
      heartbeat_at: isoTime(r.heartbeatAt),
      sandbox_tiers: (runtime?.tiers ?? []).map((t) =>
        t.ready && !live.has(t.tier)
          ? {
              tier: t.tier,
              ready: false,
              detail: `ready at start (${t.detail}) but not answering at the last heartbeat`,
            }
          : t,
      ),
      quota_enforcement: runtime?.quota ?? {
        mode: "unknown",
        detail: "the node never reported its quota enforcement",
      },
      egress_proxy:
        runtime?.egress === undefined
          ? { state: "unknown" as const, detail: "the node never reported its egress proxy" }
          : {
              state: runtime.egress.ready ? ("ready" as const) : ("not_ready" as const),
              detail: runtime.egress.detail,
            },
      checkpoints: runtime?.checkpoints ?? {
        mode: "unknown" as const,
        detail: "the node never reported its checkpoint mode",
      },
      runtime_assets:
        runtime === undefined
          ? { state: "unknown", version: "unknown", assets: [] }
          : runtime.assets === undefined
            ? { state: "verifying", version: "unknown", assets: [] }
            : { state: "verified", ...runtime.assets },
    };
  });
}

/**
 * An operator's quiesce or resume. The row is taken FOR UPDATE, as the node's own
 * sandbox manager does: the update waits for every create in flight on the node (they
 * hold it FOR KEY SHARE) and every later create reads the new state, so no new
 * generation starts on a quiesced node from this commit on. The node's heartbeat sees
 * the state and drains (destroys) or resumes its sandboxes. False: no such node.
 */
export async function setNodeState(db: Db, nodeId: string, state: NodeState): Promise<boolean> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .select({ nodeId: nodes.nodeId })
      .from(nodes)
      .where(eq(nodes.nodeId, nodeId))
      .for("update");
    if (row === undefined) return false;
    await tx.update(nodes).set({ state }).where(eq(nodes.nodeId, nodeId));
    return true;
  });
}
