import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../../shared/db/client.ts";
import { type AgentRun, agentRuns, type RunStatus } from "../../../shared/db/schema.ts";
import { lockTree } from "../../../shared/runs/tree-lock.ts";
import { fencedRun, type RunFence } from "./run-fence.ts";

export type ClaimOutcome =
  | {
      readonly ok: true;
      readonly run: AgentRun;
      readonly fence: RunFence;
      /**
       * performance.now() before the claiming UPDATE was sent: the lease it wrote ends no
       * earlier than this + TTL, so the run's heartbeat counts its silence from here.
       */
      readonly claimedAt: number;
    }
  /** Unknown id, or another claim (or a cancel) got there first: nothing to do. */
  | { readonly ok: false; readonly reason: "unknown" }
  | { readonly ok: false; readonly reason: "not_pending"; readonly status: RunStatus };

export interface ClaimRequest {
  readonly runId: string;
  readonly nodeId: string;
  readonly leaseTtlMs: number;
}

/**
 * The columns a claim sets, by either claimer (this one and the fair-share claim of a
 * waiting run): running, owned by this node, the next attempt (the fence), the lease from
 * the database clock. `started_at` is the statement's clock, not the transaction's: the
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
 * Claims a pending run for this node: one conditional UPDATE pending → running that
 * increments `attempt` (the fence of every later write), names the owner and sets the
 * lease from the database clock. Of any number of concurrent claimers (duplicate SQS
 * deliveries, several agent-hosts) exactly one gets the row back; the others see
 * `not_pending` and do nothing.
 *
 * The UPDATE runs under the execution-tree lock of the run's (uid, scope), so it is
 * ordered against the tree cleanup's decision (shared/runs/tree-lock.ts): either the
 * cleanup sees this run running and keeps the sandbox, or the claim commits after the
 * decision and the run takes the sandbox the cleanup kept warm, or acquires a new
 * generation when it destroys the old one (at worst it ends `stale_generation`); it never
 * executes in the destroyed one.
 */
export async function claimRun(db: Db, request: ClaimRequest): Promise<ClaimOutcome> {
  const [seen] = await db
    .select({
      uid: agentRuns.uid,
      runtimeScopeId: agentRuns.runtimeScopeId,
      status: agentRuns.status,
      attempt: agentRuns.attempt,
    })
    .from(agentRuns)
    .where(eq(agentRuns.runId, request.runId));
  if (seen === undefined) return { ok: false, reason: "unknown" };
  if (seen.status !== "pending") return { ok: false, reason: "not_pending", status: seen.status };

  const claimedAt = performance.now();
  const claimed = await db.transaction(async (tx) => {
    await lockTree(tx, seen.uid, seen.runtimeScopeId);
    const [row] = await tx
      .update(agentRuns)
      .set(claimedRunColumns(request))
      .where(
        and(
          eq(agentRuns.runId, request.runId),
          eq(agentRuns.status, "pending"),
          eq(agentRuns.attempt, seen.attempt),
        ),
      )
      .returning();
    return row;
  });
  if (claimed === undefined) {
    const [now] = await db
      .select({ status: agentRuns.status })
      .from(agentRuns)
      .where(eq(agentRuns.runId, request.runId));
    return { ok: false, reason: "not_pending", status: now?.status ?? "pending" };
  }
  return {
    ok: true,
    run: claimed,
    fence: { runId: claimed.runId, uid: claimed.uid, attempt: claimed.attempt },
    claimedAt,
  };
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
