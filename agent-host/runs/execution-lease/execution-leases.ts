import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { WorkspaceQuota } from "../../../shared/capability/capability-claims.ts";
import type { Db, DbOrTransaction } from "../../../shared/db/client.ts";
import type { DatabaseRetry } from "../../../shared/db/database-retry.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { PG_UNIQUE_VIOLATION, sqlStateOf } from "../../../shared/db/pg-error.ts";
import { retryDatabaseWhile } from "../../../shared/db/retry-database-while.ts";
import type { QuotaAdmission } from "../../quota/run-quota-gate.ts";
import type { RunFence } from "../claim/run-fence.ts";
import type { LendSlot } from "../fair-share/lent-slots.ts";
import { leaseRootKey } from "./lease-root.ts";
import { EXECUTION_LEASE_CHANNEL, type LeaseWakeups } from "./lease-wakeups.ts";

export interface ExecutionLeaseDeps {
  readonly db: Db;
  readonly nodeId: string;
  readonly wakeups: LeaseWakeups;
  /**
   * A waiting command re-checks at least this often: a holder whose node died never
   * notifies, its rows stop counting once its run lease expires (leaseTtlMs).
   */
  readonly pollIntervalMs: number;
  /**
   * Server-side bound on waiting for the uid's arrival lock (lock_timeout inside the
   * functions); each statement is bounded by the connection's statement_timeout as well.
   */
  readonly statementTimeoutMs: number;
  readonly logger: Logger;
  /**
   * Lends the waiting run tree's worker slot to another run until the grant (decision
   * 0141); without it (tests of the lease alone) a wait keeps its slot.
   */
  readonly lendSlot?: LendSlot;
  /**
   * The arrival and the release are tried again while the database does not answer
   * (decision 0147), for as long as the command's signal allows. Absent: one try each.
   */
  readonly retry?: DatabaseRetry;
}

/** A granted lease; release it exactly once (release() or releaseIn()). */
export interface HeldExecutionLease {
  readonly leaseId: string;
  readonly uid: string;
  readonly workdirPath: string;
  /** Arrival order of this command among the uid's commands. */
  readonly seq: number;
  /** True when an overlapping command held or awaited the root when this one arrived. */
  readonly waited: boolean;
  /**
   * True when no lease on an overlapping root was granted to anyone since the caller's
   * previous lease on this root (the `previousSeq` it passed): leased commands left the
   * root as that lease's after-scan saw it.
   */
  readonly rootUnchanged: boolean;
  /** The uid's quota as the arrival read it (only when asked with an admission). */
  readonly quota?: WorkspaceQuota;
}

/**
 * Refusals are values: the run is not live any more (ended, taken over, lease expired),
 * so the command must not run; or the wait was cancelled (`signal` aborted), and nothing
 * ran and nothing is left queued; or (with an admission) the uid's workspace is over the
 * quota its limits row says, and no lease row was written.
 */
export type AcquireResult =
  | { readonly ok: true; readonly lease: HeldExecutionLease }
  | { readonly ok: false; readonly reason: "run_not_live" | "cancelled" }
  | { readonly ok: false; readonly reason: "over_quota"; readonly quota: WorkspaceQuota };

/**
 * The Execution Lease (docs/architecture.md §5, docs/decisions/0014) in Postgres, so it holds
 * across agent-hosts: commands of one uid whose writable roots overlap (equal, or one an
 * ancestor of the other) run one at a time in arrival order; other roots and other uids
 * never wait. Arrival order is `seq`, assigned under a per-uid advisory lock, and a command
 * is granted when no earlier row of the uid overlaps it, waiting or held: FIFO without
 * overtaking, and no deadlock because a command only ever waits for smaller seqs.
 *
 * Every row is bound to the run that asked (run_id + attempt): it counts only while that
 * run is `running` under that attempt with an unexpired run lease. The run's heartbeat is
 * therefore the lease's heartbeat, and a node killed mid-command frees its roots within
 * the run-lease TTL without anyone having to notice the death.
 */
export class ExecutionLeases {
  readonly #deps: ExecutionLeaseDeps;

  constructor(deps: ExecutionLeaseDeps) {
    this.#deps = deps;
  }

  /**
   * `previousSeq`: the seq of this caller's previous lease on the same root, whose
   * after-scan it kept; the granted lease then says whether that scan is still current
   * (`rootUnchanged`, docs/decisions/0036). `admission`: the uid's measured usage; the
   * same statement then reads the uid's limits and arrives only when the usage is within
   * them (docs/decisions/0067). `rootRunId`: the run tree whose worker slot is lent while
   * the command waits.
   */
  async acquire(
    fence: RunFence,
    workdirPath: string,
    signal: AbortSignal,
    previousSeq?: number,
    admission?: QuotaAdmission,
    rootRunId?: string,
  ): Promise<AcquireResult> {
    if (signal.aborted) return { ok: false, reason: "cancelled" };
    const leaseId = randomUUID();
    const rootKey = leaseRootKey(workdirPath);
    const previous = previousSeq ?? null;
    // One round trip (a server-side function, migration 0012): the uid's arrival lock,
    // the row (only for a live run) and, when the root is free, the grant.
    let first: ArrivalRow | undefined;
    try {
      first = await this.#arriveRetried(leaseId, signal, () =>
        this.#arrive(fence, leaseId, rootKey, previous, admission),
      );
    } catch (error) {
      // Cancelled while the database did not answer: an arrival whose answer was lost
      // must not stay queued.
      if (!signal.aborted) throw error;
      await this.#withdraw({ leaseId, uid: fence.uid });
      return { ok: false, reason: "cancelled" };
    }
    if (admission !== undefined && first !== undefined && first.out_seq === null) {
      const quota = {
        workspace_bytes: Number(first.limit_bytes),
        workspace_inodes: Number(first.limit_inodes),
      };
      if (
        admission.used.bytes > quota.workspace_bytes ||
        admission.used.inodes > quota.workspace_inodes
      ) {
        return { ok: false, reason: "over_quota", quota };
      }
      return { ok: false, reason: "run_not_live" };
    }
    if (first === undefined) return { ok: false, reason: "run_not_live" };
    const seq = Number(first.out_seq);
    const lease = {
      leaseId,
      uid: fence.uid,
      workdirPath,
      seq,
      ...(first.limit_bytes === undefined || first.limit_inodes === undefined
        ? {}
        : {
            quota: {
              workspace_bytes: Number(first.limit_bytes),
              workspace_inodes: Number(first.limit_inodes),
            },
          }),
    };
    if (first.out_state === "granted") {
      return {
        ok: true,
        lease: { ...lease, waited: false, rootUnchanged: first.out_root_unchanged },
      };
    }
    // Waiting does nothing but wait: the tree's slot serves another run meanwhile, and the
    // grant takes one back before the command runs (issue 37 item 8).
    const lent = rootRunId === undefined ? undefined : this.#deps.lendSlot?.(rootRunId);
    try {
      const result = await this.#wait(fence, lease, rootKey, previous, signal);
      if (result.ok && lent !== undefined) {
        await lent.takeBack(signal);
        if (signal.aborted) {
          await this.#withdraw(lease);
          return { ok: false, reason: "cancelled" };
        }
      }
      return result;
    } finally {
      lent?.forgo();
    }
  }

  async #wait(
    fence: RunFence,
    lease: Pick<HeldExecutionLease, "leaseId" | "uid" | "workdirPath" | "seq" | "quota">,
    rootKey: string,
    previous: number | null,
    signal: AbortSignal,
  ): Promise<AcquireResult> {
    const seq = lease.seq;
    const granted = (rootUnchanged: boolean): AcquireResult => ({
      ok: true,
      lease: { ...lease, waited: true, rootUnchanged },
    });
    while (true) {
      await this.#deps.wakeups.next(fence.uid, this.#deps.pollIntervalMs, signal);
      if (signal.aborted) {
        await this.#withdraw(lease);
        return { ok: false, reason: "cancelled" };
      }
      let outcome: { out_state: Grant; out_root_unchanged: boolean } | undefined;
      try {
        [outcome] = await executeRows<{ out_state: Grant; out_root_unchanged: boolean }>(
          this.#deps.db,
          sql`select * from workcell_grant_execution_lease(
            ${lease.leaseId}::uuid, ${fence.uid}, ${rootKey}, ${seq}::bigint, ${previous}::bigint,
            ${this.#deps.statementTimeoutMs}::int)`,
        );
      } catch (error) {
        // A database blip while waiting: keep waiting (the row stays queued; if the run
        // dies meanwhile its row stops counting by itself).
        this.#deps.logger.warn({ err: error }, "execution lease check failed; retrying");
        continue;
      }
      if (outcome?.out_state === "granted") return granted(outcome.out_root_unchanged);
      if (outcome === undefined || outcome.out_state === "gone") {
        return { ok: false, reason: "run_not_live" };
      }
    }
  }

  /** The arrival statement: the row and, when the root is free, the grant (see acquire). */
  async #arrive(
    fence: RunFence,
    leaseId: string,
    rootKey: string,
    previous: number | null,
    admission: QuotaAdmission | undefined,
  ): Promise<ArrivalRow | undefined> {
    const arrive = sql`workcell_acquire_execution_lease(
        ${leaseId}::uuid, ${fence.uid}, ${rootKey}, ${fence.runId}::uuid, ${fence.attempt}::int,
        ${this.#deps.nodeId}, ${previous}::bigint, ${this.#deps.statementTimeoutMs}::int)`;
    const [row] = await executeRows<ArrivalRow>(
      this.#deps.db,
      admission === undefined
        ? sql`select * from ${arrive}`
        : // The limits row, and the arrival only under it. The condition refers to the
          // outer row alone, so PostgreSQL plans it as a one-time filter over the function
          // scan: over quota, the function is not called at all (OFFSET 0 keeps the
          // subquery from being flattened into a join filter, which would call it first).
          sql`select q.limit_bytes, q.limit_inodes, a.*
            from (select coalesce(u.workspace_bytes, ${admission.defaults.workspace_bytes}::bigint)::float8 as limit_bytes,
                         coalesce(u.workspace_inodes, ${admission.defaults.workspace_inodes}::bigint)::float8 as limit_inodes
                  from (select 1) one left join user_limits u on u.uid = ${fence.uid}) q
            left join lateral (
              select * from ${arrive}
              where q.limit_bytes >= ${admission.used.bytes}::float8
                and q.limit_inodes >= ${admission.used.inodes}::float8
              offset 0) a on true`,
    );
    return row;
  }

  /**
   * The arrival, tried again while the database does not answer. Sound because the lease
   * id is chosen once: a retry first looks for that id's row, so an arrival whose answer
   * was lost is taken up (as waiting: the wait loop's grant check says the rest), never
   * made twice (a second row of the same run would queue the run behind itself).
   */
  async #arriveRetried(
    leaseId: string,
    signal: AbortSignal,
    arrive: () => Promise<ArrivalRow | undefined>,
  ): Promise<ArrivalRow | undefined> {
    const { retry, db, logger } = this.#deps;
    if (retry === undefined) return arrive();
    const arrived = async (): Promise<ArrivalRow | undefined> => {
      const [row] = await executeRows<{ seq: string | number }>(
        db,
        sql`select seq from execution_leases where lease_id = ${leaseId}::uuid`,
      );
      return row && { out_seq: row.seq, out_state: "waiting", out_root_unchanged: false };
    };
    return retryDatabaseWhile(
      retry,
      "execution lease arrival",
      logger,
      signal,
      async (_, state) => {
        if (state.failures === 0) return arrive();
        const earlier = await arrived();
        if (earlier !== undefined) return earlier;
        try {
          return await arrive();
        } catch (error) {
          // An abandoned attempt still running in the server committed the id meanwhile.
          if (sqlStateOf(error) !== PG_UNIQUE_VIOLATION) throw error;
          return arrived();
        }
      },
    );
  }

  /**
   * Releases in its own statement (see releaseIn to join the batch commit). With `signal`
   * (the command's), tried again while the database does not answer and the signal holds
   * (a delete: a retry after a lost answer deletes nothing); else once. A row left behind
   * would queue the run's next command on this root behind its own finished one.
   */
  async release(lease: HeldExecutionLease, signal?: AbortSignal): Promise<void> {
    const { retry, db, logger } = this.#deps;
    if (retry === undefined || signal === undefined || signal.aborted) {
      return releaseIn(db, lease);
    }
    await retryDatabaseWhile(retry, "execution lease release", logger, signal, () =>
      releaseIn(db, lease),
    );
  }

  /** A cancelled wait leaves nothing queued; if the delete fails the row dies with the run. */
  async #withdraw(lease: Pick<HeldExecutionLease, "leaseId" | "uid">): Promise<void> {
    try {
      await releaseIn(this.#deps.db, lease);
    } catch (error) {
      this.#deps.logger.warn(
        { err: error },
        "could not withdraw a cancelled execution lease wait; it lapses with the run lease",
      );
    }
  }
}

type Grant = "granted" | "waiting" | "gone";

/** The arrival's row; the limits columns only with an admission, the rest null when it did not arrive. */
interface ArrivalRow {
  readonly limit_bytes?: number | string;
  readonly limit_inodes?: number | string;
  readonly out_seq: string | number | null;
  readonly out_state: Grant;
  readonly out_root_unchanged: boolean;
}

/**
 * Deletes a lease row and wakes the uid's waiters when the transaction commits (NOTIFY is
 * delivered at commit), so the release can share the change batch's transaction.
 */
export async function releaseIn(
  tx: DbOrTransaction,
  lease: Pick<HeldExecutionLease, "leaseId" | "uid">,
): Promise<void> {
  await tx.execute(sql`
    with released as (delete from execution_leases where lease_id = ${lease.leaseId} returning uid)
    select pg_notify(${EXECUTION_LEASE_CHANNEL}, uid) from released`);
}
