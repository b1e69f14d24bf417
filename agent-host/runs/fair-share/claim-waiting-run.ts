import { and, eq, isNotNull, sql } from "drizzle-orm";
import type { Db } from "../../../shared/db/client.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { agentRuns } from "../../../shared/db/schema.ts";
import { lockTree } from "../../../shared/runs/tree-lock.ts";
import type { ClaimOutcome } from "../claim-run.ts";
import { lockUidSlots } from "./uid-slot-lock.ts";

export interface WaitingClaimRequest {
  readonly nodeId: string;
  readonly leaseTtlMs: number;
  /** max_concurrent_runs of a uid without an admin override (the deployment's default). */
  readonly defaultMaxConcurrentRuns: number;
}

export type WaitingClaim =
  | (ClaimOutcome & { readonly ok: true })
  /** No uid with a waiting run is under its limit (or this node is not active). */
  | { readonly ok: false; readonly reason: "none" }
  /** Every candidate was taken by another claimer meanwhile: look again. */
  | { readonly ok: false; readonly reason: "contended" };

/** Candidates looked at per call; a claimer losing a race moves on to the next. */
const CANDIDATES = 8;

/**
 * The fair pick (docs/decisions/0037): of the uids with a waiting run and fewer running
 * root runs than their `max_concurrent_runs` (across all nodes), the one with the fewest
 * running goes first, ties by its oldest waiting run; within a uid, oldest first. So a
 * user with 20 queued runs holds at most its limit, and the next free slot goes to a user
 * with none running. A node that is not `active` (quiesced) claims nothing: it would
 * only hand the run back.
 */
export async function claimWaitingRun(db: Db, request: WaitingClaimRequest): Promise<WaitingClaim> {
  const candidates = await executeRows<{ run_id: string; uid: string }>(
    db,
    sql`with running as (
          select uid, count(*)::int as n from agent_runs
          where status = 'running' and parent_run_id is null
          group by uid
        ), heads as (
          select distinct on (uid) run_id, uid, created_at from agent_runs
          where status = 'pending' and waiting_since is not null and parent_run_id is null
          order by uid, created_at, run_id
        )
        select h.run_id, h.uid from heads h
        left join running r on r.uid = h.uid
        left join user_limits l on l.uid = h.uid
        where coalesce(r.n, 0) < coalesce(l.max_concurrent_runs, ${request.defaultMaxConcurrentRuns}::int)
          and exists (select 1 from nodes where node_id = ${request.nodeId} and state = 'active')
        order by coalesce(r.n, 0), h.created_at, h.run_id
        limit ${CANDIDATES}`,
  );
  if (candidates.length === 0) return { ok: false, reason: "none" };
  for (const candidate of candidates) {
    const claimed = await claimIfUnderLimit(db, candidate.run_id, candidate.uid, request);
    if (claimed !== undefined) {
      return {
        ok: true,
        run: claimed,
        fence: { runId: claimed.runId, uid: claimed.uid, attempt: claimed.attempt },
      };
    }
  }
  return { ok: false, reason: "contended" };
}

/**
 * Under the uid's slot lock the running count is read again (the candidate query did not
 * lock), then the run is claimed as claimRun does: pending → running, attempt + 1, lease
 * from the database clock, under the tree lock. `started_at` is the clock after the locks,
 * so a run's start is never recorded before the end of the run whose slot it took.
 */
async function claimIfUnderLimit(db: Db, runId: string, uid: string, request: WaitingClaimRequest) {
  return db.transaction(async (tx) => {
    await lockUidSlots(tx, uid);
    const [room] = await executeRows<{ ok: boolean }>(
      tx,
      sql`select (select count(*) from agent_runs
                   where uid = ${uid} and status = 'running' and parent_run_id is null)
               < coalesce((select max_concurrent_runs from user_limits where uid = ${uid}),
                          ${request.defaultMaxConcurrentRuns}::int) as ok`,
    );
    if (room?.ok !== true) return undefined;
    const [seen] = await tx
      .select({ scope: agentRuns.runtimeScopeId })
      .from(agentRuns)
      .where(eq(agentRuns.runId, runId));
    if (seen === undefined) return undefined;
    await lockTree(tx, uid, seen.scope);
    const [row] = await tx
      .update(agentRuns)
      .set({
        status: "running",
        ownerNode: request.nodeId,
        attempt: sql`${agentRuns.attempt} + 1`,
        leaseExpiresAt: sql`now() + ${request.leaseTtlMs}::bigint * interval '1 millisecond'`,
        startedAt: sql`clock_timestamp()`,
        waitingSince: null,
      })
      .where(
        and(
          eq(agentRuns.runId, runId),
          eq(agentRuns.status, "pending"),
          isNotNull(agentRuns.waitingSince),
        ),
      )
      .returning();
    return row;
  });
}
