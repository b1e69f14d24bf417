import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { releaseIn } from "../runs/execution-lease/execution-leases.ts";
import { leaseRootKey } from "../runs/execution-lease/lease-root.ts";
import type { LeaseWakeups } from "../runs/execution-lease/lease-wakeups.ts";

export interface CheckpointLeaseDeps {
  readonly db: Db;
  readonly nodeId: string;
  /** Wakes a waiter when a lease row of its uid is released; without it, waits poll. */
  readonly wakeups?: Pick<LeaseWakeups, "next">;
  /** How long a request waits for the running command; then workdir_busy, nothing taken. */
  readonly waitMs: number;
  /** The row lapses this long after its last renewal (a dead node's row frees the Workdir). */
  readonly ttlMs: number;
  /** A waiter re-asks at least this often. */
  readonly pollIntervalMs: number;
  /** Server-side bound on the uid's arrival lock. */
  readonly lockTimeoutMs: number;
  readonly logger: Logger;
}

/** Held by `run`'s callback: `confirm()` says the lease never lapsed up to now. */
export interface HeldCheckpointLease {
  readonly leaseId: string;
  /** Renews the row; false when it lapsed at any point (then another command may have written). */
  confirm(): Promise<boolean>;
}

type HoldState = "granted" | "waiting" | "gone";

/** The default bounds: a request waits a minute; a dead node's row frees its Workdir in 30 s. */
export const CHECKPOINT_LEASE_DEFAULTS = {
  waitMs: 60_000,
  ttlMs: 30_000,
  pollIntervalMs: 250,
  lockTimeoutMs: 5_000,
} as const;

/**
 * The Workdir's Execution Lease for a holder that is not a run (docs/decisions/0170): a
 * manual checkpoint queues behind the command that is running (FIFO with the commands,
 * workcell_hold_execution_lease), copies while it holds, and releases; a command that
 * arrives meanwhile waits for it. The row is renewed every ttl/3 while it waits or holds,
 * and lapses ttl after the last renewal, so a node killed mid-copy frees the Workdir. The
 * wait is bounded: past `waitMs` the row is withdrawn and the caller gets 409
 * workdir_busy (nothing was taken).
 */
export async function withCheckpointLease<T>(
  deps: CheckpointLeaseDeps,
  target: { readonly uid: string; readonly workdirPath: string },
  signal: AbortSignal,
  run: (held: HeldCheckpointLease) => Promise<T>,
): Promise<T> {
  const leaseId = randomUUID();
  const rootKey = leaseRootKey(target.workdirPath);
  const hold = async (arrive: boolean): Promise<HoldState> => {
    const [row] = await executeRows<{ out_state: HoldState }>(
      deps.db,
      sql`select * from workcell_hold_execution_lease(${leaseId}::uuid, ${target.uid}, ${rootKey},
            ${deps.nodeId}, ${arrive}, ${deps.ttlMs}::int, ${deps.lockTimeoutMs}::int)`,
    );
    return row?.out_state ?? "gone";
  };
  const release = async () => {
    try {
      await releaseIn(deps.db, { leaseId, uid: target.uid });
    } catch (err) {
      deps.logger.warn(
        { err, lease_id: leaseId },
        "checkpoint lease not released; it lapses at its expiry",
      );
    }
  };
  let lapsed = false;
  const renew = async () => {
    try {
      if ((await hold(false)) === "gone") lapsed = true;
    } catch (err) {
      // Not renewed this time: the next renewal (or the expiry) decides.
      deps.logger.warn({ err, lease_id: leaseId }, "checkpoint lease renewal failed");
    }
  };
  const timer = setInterval(() => void renew(), Math.max(100, Math.floor(deps.ttlMs / 3)));
  timer.unref();
  try {
    await waitForGrant(deps, target.uid, hold, signal);
    return await run({
      leaseId,
      confirm: async () => !lapsed && (await hold(false)) === "granted",
    });
  } finally {
    clearInterval(timer);
    await release();
  }
}

async function waitForGrant(
  deps: CheckpointLeaseDeps,
  uid: string,
  hold: (arrive: boolean) => Promise<HoldState>,
  signal: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + deps.waitMs;
  let state = await hold(true);
  while (state !== "granted") {
    if (state === "gone") throw busy(deps.waitMs, "the wait lapsed");
    const left = deadline - Date.now();
    if (left <= 0) throw busy(deps.waitMs, "the running command did not end in time");
    if (signal.aborted) throw signal.reason;
    const wait = Math.min(left, deps.pollIntervalMs);
    if (deps.wakeups === undefined) await sleep(wait, signal);
    else await deps.wakeups.next(uid, wait, signal);
    state = await hold(false);
  }
}

function busy(waitMs: number, why: string) {
  return domainError("workdir_busy", {
    message: `No checkpoint was taken: a command of a run held the Workdir for more than ${Math.round(waitMs / 1000)} s (${why}). Retry when the command has ended, or cancel the run.`,
    details: { waited_ms: waitMs },
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
