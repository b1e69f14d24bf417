import { DEFAULT_FILE_VIEW, type FileView } from "../../../shared/paths/file-view.ts";
import { type SandboxTier, tierOfInstanceId } from "../sandbox-tier.ts";
import type { SandboxRow } from "./sandbox-store.ts";

/** The parts of an acquire request the decision reads. */
export type AcquireAsk = { workdirPath: string; tier?: SandboxTier; fileView?: FileView };

/** What the node knows when it decides, read under the sandbox lock. */
export type NodeView = {
  /** This node's id. */
  id: string;
  /** This node's state (`active`, `quiesced`) as read FOR KEY SHARE. */
  state: string;
  /** The row's node has lost its lease (no heartbeat, stopped, no row); only read when
   * a running row belongs to another node. */
  rowNodeLost: boolean;
  /** The row's generation runs here (known live, or found running with its labels);
   * only read when a running row belongs to this node. */
  rowRunningHere: boolean;
};

/**
 * What an acquire does, decided from facts alone (docs/decisions/0091). Every effect
 * that waits on something other than the lock's own connection (a destroy, which claims
 * the row on another pooled connection and talks to the engine) is carried out by the
 * caller after the lock's transaction has ended.
 */
export type AcquireDecision =
  /** The running generation serves this request. */
  | { kind: "reuse"; generation: number }
  /** No live generation: claim a new one and create it. */
  | { kind: "create" }
  /**
   * A generation kept warm after its tree ended, made for another tier or file view:
   * destroy it (after the transaction), then decide again.
   */
  | { kind: "replace_kept_warm"; generation: number }
  /** The row says running but its sandbox is gone: fail it, create anew, remove what is left. */
  | { kind: "replace_dead"; generation: number; instanceId: string | null }
  /**
   * The row belongs to another node that no longer holds it: a lost node, or a live one
   * whose kept-warm generation no run uses (the claim left the run to that node for the
   * affinity wait, decision 0113, so a claim here means the wait passed): fail it and
   * create here. The other node's container is its reconciler's to remove.
   */
  | { kind: "replace_other_node"; generation: number; otherNodeId: string; nodeLost: boolean }
  | { kind: "refuse"; refusal: DecidedRefusal };

/** The refusals a decision can make (the request's own, not the lock's or the driver's). */
export type DecidedRefusal =
  | {
      ok: false;
      reason: "sandbox_identity_mismatch";
      liveWorkdirPath: string;
      inUse?: { tier: SandboxTier; fileView: FileView };
    }
  | { ok: false; reason: "node_quiesced" }
  | { ok: false; reason: "sandbox_on_other_node"; nodeId: string };

const QUIESCED = { kind: "refuse", refusal: { ok: false, reason: "node_quiesced" } } as const;

export function decideAcquire(
  row: SandboxRow | undefined,
  request: AcquireAsk,
  node: NodeView,
): AcquireDecision {
  const active = node.state === "active";
  if (row?.state !== "running") return active ? { kind: "create" } : QUIESCED;
  // Another tier or file view needs other mounts: a generation no run uses any more
  // (kept warm after its tree ended) is replaced; one still in use is a mismatch.
  const otherMounts = !sameTier(row.instanceId, request) || !sameFileView(row, request);
  if (row.workdirPath !== request.workdirPath || (otherMounts && row.releasedAt === null)) {
    return { kind: "refuse", refusal: mismatch(row, request) };
  }
  if (row.nodeId !== node.id) {
    // A lost node serves nothing: its row no longer holds the scope (§10). Its
    // container goes when that node's reconciler sees the row is not live. A live node
    // keeps a generation a run still uses; one only kept warm is given up.
    if (!node.rowNodeLost && row.releasedAt === null) {
      return {
        kind: "refuse",
        refusal: { ok: false, reason: "sandbox_on_other_node", nodeId: row.nodeId },
      };
    }
    if (!active) return QUIESCED;
    return {
      kind: "replace_other_node",
      generation: row.generation,
      otherNodeId: row.nodeId,
      nodeLost: node.rowNodeLost,
    };
  }
  if (!active) return QUIESCED;
  if (otherMounts) return { kind: "replace_kept_warm", generation: row.generation };
  if (node.rowRunningHere) return { kind: "reuse", generation: row.generation };
  return { kind: "replace_dead", generation: row.generation, instanceId: row.instanceId };
}

function mismatch(row: SandboxRow, request: AcquireAsk): DecidedRefusal {
  return {
    ok: false,
    reason: "sandbox_identity_mismatch",
    liveWorkdirPath: row.workdirPath,
    ...(row.workdirPath === request.workdirPath && row.instanceId !== null
      ? { inUse: { tier: tierOfInstanceId(row.instanceId), fileView: row.fileView } }
      : {}),
  };
}

/** A live sandbox serves only requests of its own tier (or naming none). */
export function sameTier(instanceId: string | null, request: { tier?: SandboxTier }): boolean {
  return (
    request.tier === undefined ||
    instanceId === null ||
    tierOfInstanceId(instanceId) === request.tier
  );
}

/** A live sandbox serves only requests of its own file view (absent = `workspace`). */
export function sameFileView(live: { fileView: FileView }, request: { fileView?: FileView }) {
  return live.fileView === (request.fileView ?? DEFAULT_FILE_VIEW);
}
