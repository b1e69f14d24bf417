import { and, eq, isNotNull, type SQL, sql } from "drizzle-orm";
import type { Db } from "../../../shared/db/client.ts";
import {
  executePreparedStatement,
  prepareStatement,
} from "../../../shared/db/execute-prepared-rows.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { agentRuns } from "../../../shared/db/schema.ts";
import { nodeIsLost } from "../../../shared/runs/node-liveness.ts";
import { lockTree } from "../../../shared/runs/tree-lock.ts";
import { type ClaimOutcome, claimedRunColumns } from "./claim-run.ts";
import { findLostClaim, type LostClaimLookup } from "./find-lost-claim.ts";
import { lockUidSlots } from "./uid-slot-lock.ts";

export interface WaitingClaimRequest {
  readonly nodeId: string;
  readonly leaseTtlMs: number;
  /** max_concurrent_runs of a uid without an admin override (the deployment's default). */
  readonly defaultMaxConcurrentRuns: number;
  /** Only a uid with no root run running anywhere (the node's IDLE_UID_SLOTS). */
  readonly idleUidsOnly?: boolean;
  /** Scope affinity (run-limits.ts affinityWaitMs, decision 0113); 0: none. */
  readonly affinityWaitMs?: number;
  /** Node liveness for affinity: a node silent this long is lost. */
  readonly nodeTtlMs?: number;
  /** Runs of these tiers are not claimed (a tier that stopped answering here, decision 0114). */
  readonly unavailable?: UnavailableTiers;
  /** A claim whose answer was lost is looked up (decision 0150); none: its error is thrown. */
  readonly lostClaim?: LostClaimLookup;
}

/** Tiers whose runs a node must not claim now, and the tier a run naming none gets here. */
export interface UnavailableTiers {
  readonly tiers: readonly string[];
  readonly defaultTier: string | undefined;
}

export type WaitingClaim =
  | (ClaimOutcome & {
      readonly ok: true;
      /**
       * Whether another run may be claimable now: another candidate was seen, or the
       * claimed uid has more waiting runs. When false, the fill stops: a run that becomes
       * claimable later (parked, or a slot freed) wakes the slots itself.
       */
      readonly more: boolean;
      /**
       * Whether the claimed run was the only waiting run at all (every uid, whatever its
       * limit): then the end of a run needs no fill, since a run that starts waiting
       * later wakes the slots itself (decision 0075).
       */
      readonly nothingElseWaits: boolean;
    })
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
  const candidates = await executeRows<{
    run_id: string;
    uid: string;
    heads: number;
    attempt: number;
  }>(
    db,
    // Heads first (one per uid with a waiting run, from the pending partial index), then
    // the running count of those uids only: with nothing waiting (most wakes) the query
    // reads no running run at all.
    sql`with heads as (
          select distinct on (uid) run_id, uid, created_at, attempt from agent_runs
          where status = 'pending' and waiting_since is not null and parent_run_id is null
            ${leftToItsSandboxNode(request)}
            ${notOfUnavailableTiers(request.unavailable)}
          order by uid, created_at, run_id
        ), counted as (
          select h.run_id, h.uid, h.created_at, h.attempt,
            (select count(*)::int from agent_runs r
             where r.uid = h.uid and r.status = 'running' and r.parent_run_id is null) as n
          from heads h
        )
        select c.run_id, c.uid, c.attempt, (select count(*)::int from heads) as heads
        from counted c
        left join user_limits l on l.uid = c.uid
        where c.n < coalesce(l.max_concurrent_runs, ${request.defaultMaxConcurrentRuns}::int)
          and (c.n = 0 or not ${request.idleUidsOnly === true}::boolean)
          and exists (select 1 from nodes where node_id = ${request.nodeId} and state = 'active')
        order by c.n, c.created_at, c.run_id
        limit ${CANDIDATES}`,
  );
  if (candidates.length === 0) return { ok: false, reason: "none" };
  for (const candidate of candidates) {
    const claimedAt = performance.now();
    const claim = await claimIfUnderLimit(db, candidate.run_id, candidate.uid, request).catch(
      async (error: unknown) => {
        const row = await findLostClaim(
          db,
          { runId: candidate.run_id, nodeId: request.nodeId, attemptBefore: candidate.attempt },
          error,
          request.lostClaim,
        );
        // Not ours: the claim rolled back; the caller's poll tries again, as before.
        if (row === undefined) throw error;
        // `more`: the fill looks again, which is what a lost answer leaves unknown.
        return { row, more: true };
      },
    );
    if (claim !== undefined) {
      const claimed = claim.row;
      return {
        ok: true,
        run: claimed,
        fence: { runId: claimed.runId, uid: claimed.uid, attempt: claimed.attempt },
        claimedAt,
        more: candidates.length > 1 || claim.more,
        nothingElseWaits: candidates.length === 1 && candidate.heads === 1 && !claim.more,
      };
    }
  }
  return { ok: false, reason: "contended" };
}

/**
 * Scope affinity (decision 0113): excludes (as `and not exists …` on agent_runs) a waiting
 * run whose scope's sandbox is running on another live node, while a run uses it there or
 * until `affinityWaitMs` after both its release and the run's wait began. That node's own
 * fill claims it when a slot frees (its run's ending wakes it); claiming it here would
 * only hand it back (`sandbox_on_other_node`), every handBackDelaySeconds, until the
 * hand-back limit failed it. Past the bound the kept-warm sandbox is given up
 * (acquire-sandbox.ts) and the run starts fresh on whichever node claims it.
 */
function leftToItsSandboxNode(request: WaitingClaimRequest): SQL {
  const waitMs = request.affinityWaitMs ?? 0;
  if (waitMs <= 0 || request.nodeTtlMs === undefined) return sql``;
  return sql`and not exists (
      select 1 from sandboxes s join nodes on nodes.node_id = s.node_id
      where s.uid = agent_runs.uid and s.runtime_scope_id = agent_runs.runtime_scope_id
        and s.state = 'running' and s.node_id <> ${request.nodeId}
        and not (${nodeIsLost(request.nodeTtlMs)})
        and (s.released_at is null
             or greatest(s.released_at, agent_runs.waiting_since)
                > now() - ${waitMs}::bigint * interval '1 millisecond'))`;
}

/**
 * A run of a tier this node cannot serve now (decision 0114) is left for a node that can,
 * or for this one once the tier answers: claiming it would only hand it back. A run that
 * names no tier gets the node's default tier (agent-host/sandbox/tiered-driver.ts).
 */
function notOfUnavailableTiers(unavailable: UnavailableTiers | undefined): SQL {
  if (unavailable === undefined || unavailable.tiers.length === 0) return sql``;
  const tiers = `{${unavailable.tiers.join(",")}}`;
  return sql`and coalesce(agent_runs.agent->>'sandbox', ${unavailable.defaultTier ?? ""}::text)
      <> all(${tiers}::text[])`;
}

const value = (name: string) => sql.placeholder(name);

/** Fixed text, run by every claim: a named statement (docs/decisions/0087, 0183). */
const ROOM_UNDER_LIMIT = prepareStatement(
  "claim_room_under_limit",
  sql`select (select count(*) from agent_runs
               where uid = ${value("uid")}::text and status = 'running' and parent_run_id is null)
           < (case when ${value("idle_only")}::boolean then 1
              else coalesce((select max_concurrent_runs from user_limits where uid = ${value("uid")}::text),
                            ${value("default_max")}::int) end) as ok,
        runtime_scope_id as scope,
        exists (select 1 from agent_runs
                where uid = ${value("uid")}::text and status = 'pending' and waiting_since is not null
                  and parent_run_id is null and run_id <> ${value("run_id")}::uuid) as more
      from agent_runs where run_id = ${value("run_id")}::uuid`,
);

/**
 * Under the uid's slot lock the running count is read again (the candidate query did not
 * lock), then the run is claimed: pending → running, attempt + 1 (the fence), lease from
 * the database clock, under the tree lock (ordered against the tree cleanup's decision,
 * shared/runs/tree-lock.ts). `started_at` is the clock after the locks,
 * so a run's start is never recorded before the end of the run whose slot it took.
 */
async function claimIfUnderLimit(db: Db, runId: string, uid: string, request: WaitingClaimRequest) {
  return db.transaction(async (tx) => {
    await lockUidSlots(tx, uid);
    // The room under the limit, the run's scope (for the tree lock) and whether the uid
    // has another waiting run (the fill looks again then) in one statement.
    const [seen] = await executePreparedStatement<{ ok: boolean; scope: string; more: boolean }>(
      tx,
      ROOM_UNDER_LIMIT,
      {
        uid,
        run_id: runId,
        idle_only: request.idleUidsOnly === true,
        default_max: request.defaultMaxConcurrentRuns,
      },
    );
    if (seen === undefined || seen.ok !== true) return undefined;
    await lockTree(tx, uid, seen.scope);
    const [row] = await tx
      .update(agentRuns)
      .set({ ...claimedRunColumns(request), waitingSince: null })
      .where(
        and(
          eq(agentRuns.runId, runId),
          eq(agentRuns.status, "pending"),
          isNotNull(agentRuns.waitingSince),
        ),
      )
      .returning()
      // Fixed text (values as parameters), run by every claim: a named statement (0183).
      .prepare("claim_waiting_run")
      .execute();
    return row === undefined ? undefined : { row, more: seen.more === true };
  });
}
