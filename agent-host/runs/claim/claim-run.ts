import { sql } from "drizzle-orm";
import type { Db } from "../../../shared/db/client.ts";
import { type AgentRun, agentRuns } from "../../../shared/db/schema.ts";
import { fencedRun, type RunFence } from "./run-fence.ts";

/** A run this node claimed (claim-waiting-run.ts is the one claimer). */
export type ClaimOutcome = {
  readonly ok: true;
  readonly run: AgentRun;
  readonly fence: RunFence;
  /**
   * performance.now() before the claiming UPDATE was sent: the lease it wrote ends no
   * earlier than this + TTL, so the run's heartbeat counts its silence from here.
   */
  readonly claimedAt: number;
};

export interface ClaimRequest {
  readonly runId: string;
  readonly nodeId: string;
  readonly leaseTtlMs: number;
}

/**
 * The columns the claim (claim-waiting-run.ts) sets: running, owned by this node, the
 * next attempt (the fence), the lease from the database clock. `started_at` is the statement's clock, not the transaction's: the
 * claim may have waited on the tree lock, and the run starts when it gets the row.
 */
export function claimedRunColumns(request: Pick<ClaimRequest, "nodeId" | "leaseTtlMs">) {
  return {
    status: "running",
    ownerNode: request.nodeId,
    attempt: sql`${agentRuns.attempt} + 1`,
    leaseExpiresAt: sql`now() + ${request.leaseTtlMs}::bigint * interval '1 millisecond'`,
    startedAt: sql`clock_timestamp()`,
  } as const;
}

/**
 * Gives a claimed run back (running → pending, fenced) when nothing of it has executed:
 * the node is quiesced, the scope's sandbox lives on another node, or this node is
 * stopping before the run started. `dispatched_at` is set so that the dispatch sweeper
 * sends it again if the caller's own re-dispatch is lost. False when the fence no longer
 * holds (nothing changed).
 */
export async function releaseClaim(db: Db, fence: RunFence): Promise<boolean> {
  const rows = await db
    .update(agentRuns)
    .set({
      status: "pending",
      ownerNode: null,
      leaseExpiresAt: null,
      startedAt: null,
      dispatchedAt: sql`now()`,
    })
    .where(fencedRun(fence))
    .returning({ runId: agentRuns.runId });
  return rows.length === 1;
}
