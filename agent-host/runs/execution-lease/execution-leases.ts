import { randomUUID } from "node:crypto";
import { type SQL, sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db, DbOrTransaction, DbTransaction } from "../../../shared/db/client.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import type { RunFence } from "../run-fence.ts";
import { leaseRootKey } from "./lease-root.ts";
import { EXECUTION_LEASE_CHANNEL, type LeaseWakeups } from "./lease-wakeups.ts";

/** Namespace of the per-uid lock that orders lease arrivals (single-bigint key space). */
const LEASE_LOCK_NAMESPACE = "workcell.runs.execution-lease:";

export interface ExecutionLeaseDeps {
  readonly db: Db;
  readonly nodeId: string;
  readonly wakeups: LeaseWakeups;
  /**
   * A waiting command re-checks at least this often: a holder whose node died never
   * notifies, its rows stop counting once its run lease expires (leaseTtlMs).
   */
  readonly pollIntervalMs: number;
  /** Server-side bound on each lease statement (SET LOCAL statement_timeout). */
  readonly statementTimeoutMs: number;
  readonly logger: Logger;
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
}

/**
 * Refusals are values: the run is not live any more (ended, taken over, lease expired),
 * so the command must not run; or the wait was cancelled (`signal` aborted), and nothing
 * ran and nothing is left queued.
 */
export type AcquireResult =
  | { readonly ok: true; readonly lease: HeldExecutionLease }
  | { readonly ok: false; readonly reason: "run_not_live" | "cancelled" };

/**
 * The Execution Lease (ARCHITECTURE.md §5, docs/decisions/0014) in Postgres, so it holds
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

  async acquire(fence: RunFence, workdirPath: string, signal: AbortSignal): Promise<AcquireResult> {
    if (signal.aborted) return { ok: false, reason: "cancelled" };
    const leaseId = randomUUID();
    const rootKey = leaseRootKey(workdirPath);
    // The fast path is one transaction of four statements (lock, insert, grant, commit):
    // a command on a free root pays little more than two round trips for its lease.
    const first = await this.#transaction(fence.uid, async (tx) => {
      const [row] = await executeRows<{ seq: string | number }>(
        tx,
        sql`
        insert into execution_leases (lease_id, uid, root_key, run_id, attempt, node_id, state)
        select ${leaseId}, ${fence.uid}, ${rootKey}, ${fence.runId}, ${fence.attempt},
               ${this.#deps.nodeId}, 'waiting'
        where exists (
          select 1 from agent_runs r
          where r.run_id = ${fence.runId} and r.uid = ${fence.uid} and r.attempt = ${fence.attempt}
            and r.status = 'running' and r.lease_expires_at > now())
        returning seq`,
      );
      if (row === undefined) return undefined;
      const seq = Number(row.seq);
      if (await this.#grantIfFree(tx, fence.uid, leaseId, rootKey, seq)) {
        return { seq, granted: "granted" as Grant };
      }
      return { seq, granted: await this.#tryGrant(tx, fence.uid, leaseId, rootKey, seq) };
    });
    if (first === undefined) return { ok: false, reason: "run_not_live" };
    const lease = { leaseId, uid: fence.uid, workdirPath, seq: first.seq };
    if (first.granted === "granted") return { ok: true, lease: { ...lease, waited: false } };
    while (true) {
      await this.#deps.wakeups.next(fence.uid, this.#deps.pollIntervalMs, signal);
      if (signal.aborted) {
        await this.#withdraw(lease);
        return { ok: false, reason: "cancelled" };
      }
      let outcome: Grant;
      try {
        outcome = await this.#transaction(fence.uid, (tx) =>
          this.#tryGrant(tx, fence.uid, leaseId, rootKey, first.seq),
        );
      } catch (error) {
        // A database blip while waiting: keep waiting (the row stays queued; if the run
        // dies meanwhile its row stops counting by itself).
        this.#deps.logger.warn({ err: error }, "execution lease check failed; retrying");
        continue;
      }
      if (outcome === "granted") return { ok: true, lease: { ...lease, waited: true } };
      if (outcome === "gone") return { ok: false, reason: "run_not_live" };
    }
  }

  /** Releases in its own transaction (see releaseIn to join the batch commit). */
  async release(lease: HeldExecutionLease): Promise<void> {
    await this.#transaction(undefined, (tx) => releaseIn(tx, lease));
  }

  /** A cancelled wait leaves nothing queued; if the delete fails the row dies with the run. */
  async #withdraw(lease: Omit<HeldExecutionLease, "waited">): Promise<void> {
    try {
      await this.#transaction(undefined, (tx) => releaseIn(tx, lease));
    } catch (error) {
      this.#deps.logger.warn(
        { err: error },
        "could not withdraw a cancelled execution lease wait; it lapses with the run lease",
      );
    }
  }

  /** Grants the lease in one statement when no earlier live row of the uid overlaps it. */
  async #grantIfFree(
    tx: DbTransaction,
    uid: string,
    leaseId: string,
    rootKey: string,
    seq: number,
  ): Promise<boolean> {
    const granted = await executeRows<{ seq: unknown }>(
      tx,
      sql`
      update execution_leases set state = 'held', acquired_at = now()
      where lease_id = ${leaseId} and not exists (
        select 1 from execution_leases o
        where o.uid = ${uid} and o.seq < ${seq}
          and (left(o.root_key, char_length(${rootKey})) = ${rootKey}
               or left(${rootKey}, char_length(o.root_key)) = o.root_key)
          and ${liveRow(sql`o`)})
      returning seq`,
    );
    return granted.length > 0;
  }

  async #tryGrant(
    tx: DbTransaction,
    uid: string,
    leaseId: string,
    rootKey: string,
    seq: number,
  ): Promise<Grant> {
    // Rows of runs that are no longer live (node died, run ended or was taken over) are
    // dropped here, under the uid's lock, by whoever next looks.
    await tx.execute(sql`
      delete from execution_leases l where l.uid = ${uid} and not ${liveRow(sql`l`)}`);
    const [mine] = await executeRows<{ state: string }>(
      tx,
      sql`
      select state from execution_leases where lease_id = ${leaseId}`,
    );
    if (mine === undefined) return "gone";
    const [blocker] = await executeRows<{ seq: unknown }>(
      tx,
      sql`
      select o.seq from execution_leases o
      where o.uid = ${uid} and o.seq < ${seq}
        and (left(o.root_key, char_length(${rootKey})) = ${rootKey}
             or left(${rootKey}, char_length(o.root_key)) = o.root_key)
      limit 1`,
    );
    if (blocker !== undefined) return "waiting";
    await tx.execute(sql`
      update execution_leases set state = 'held', acquired_at = now()
      where lease_id = ${leaseId}`);
    return "granted";
  }

  /** A transaction bounded server-side, under the uid's arrival lock when `uid` is given. */
  #transaction<T>(uid: string | undefined, work: (tx: DbTransaction) => Promise<T>): Promise<T> {
    return this.#deps.db.transaction(async (tx) => {
      const timeout = sql`set_config('statement_timeout', ${String(this.#deps.statementTimeoutMs)}, true)`;
      // One round trip: the bound (for the statements after it) and the uid's arrival lock.
      await tx.execute(
        uid === undefined
          ? sql`select ${timeout}`
          : sql`select ${timeout}, pg_advisory_xact_lock(hashtextextended(${LEASE_LOCK_NAMESPACE + uid}, 0))`,
      );
      return work(tx);
    });
  }
}

type Grant = "granted" | "waiting" | "gone";

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

/** The row `alias` belongs to a run that is running under the same attempt, lease unexpired. */
function liveRow(alias: SQL): SQL {
  return sql`exists (
    select 1 from agent_runs r
    where r.run_id = ${alias}.run_id and r.uid = ${alias}.uid and r.attempt = ${alias}.attempt
      and r.status = 'running' and r.lease_expires_at > now())`;
}
