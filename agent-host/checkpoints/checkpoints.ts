import { randomUUID } from "node:crypto";
import { and, desc, eq, sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";
import {
  type CheckpointRow,
  type CheckpointSource,
  checkpoints,
  DEFAULT_MAX_CHECKPOINTS_PER_THREAD,
} from "../../shared/db/schema.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import {
  CHECKPOINT_LEASE_DEFAULTS,
  type CheckpointLeaseDeps,
  withCheckpointLease,
} from "./checkpoint-lease.ts";
import type { CheckpointStore } from "./checkpoint-store.ts";
import type { TreeStats } from "./copy-tree.ts";
import { forkWorkdir } from "./fork-workdir.ts";
import { restoreWorkdir } from "./restore-workdir.ts";

export interface CheckpointsDeps {
  readonly db: Db;
  readonly store: CheckpointStore;
  readonly nodeId: string;
  /** The uid's UserWorkspace bytes as the node's quota accounting sees them. */
  readonly workspaceBytes: (uid: string, signal: AbortSignal) => Promise<number>;
  /** The deployment's workspace_bytes, for a uid without a limits row. */
  readonly defaultWorkspaceBytes: number;
  readonly defaultMaxPerThread?: number;
  /** Bounds of a manual checkpoint's Execution Lease (CHECKPOINT_LEASE_DEFAULTS otherwise). */
  readonly lease?: Partial<Omit<CheckpointLeaseDeps, "db" | "nodeId" | "logger">>;
  readonly logger: Logger;
}

/** Who a checkpoint is for: the thread and its Workdir, as the caller authorised them. */
export interface CheckpointTarget {
  readonly uid: string;
  readonly threadId: string;
  readonly workdirPath: string;
}

export interface TakeOptions {
  readonly source: CheckpointSource;
  readonly runId?: string;
  readonly label?: string;
  /**
   * Asked after the copy, before the row: false when what kept commands off the Workdir
   * lapsed meanwhile, and then the copy is removed and nothing is recorded.
   */
  readonly confirm?: () => Promise<boolean>;
}

/**
 * Checkpoints of threads (docs/architecture.md §16): bytes in the node's store, one row
 * each in Postgres. The Workdir's Execution Lease keeps commands off it meanwhile: the
 * run's own for a before-run checkpoint, a holder row of its own for the API's
 * (takeUnderLease, docs/decisions/0170).
 */
export class Checkpoints {
  readonly #deps: CheckpointsDeps;

  constructor(deps: CheckpointsDeps) {
    this.#deps = deps;
  }

  get mode() {
    return this.#deps.store.mode;
  }

  /**
   * Measures the Workdir, refuses with quota_exceeded (nothing written) when the uid's
   * workspace plus its checkpoints plus this one would pass workspace_bytes, copies it into
   * the store, records the row and prunes the thread beyond max_checkpoints_per_thread.
   * A Workdir unchanged since the thread's previous checkpoint is not copied: the row names
   * that checkpoint's directory (decision 0171), adds no bytes and needs no quota check.
   */
  async take(
    target: CheckpointTarget,
    options: TakeOptions,
    signal: AbortSignal,
    prune = true,
  ): Promise<CheckpointRow> {
    const { store } = this.#deps;
    const { previous, full } = await this.#newest(target);
    const baseId =
      previous?.workdirPath === target.workdirPath && previous.nodeId === this.#deps.nodeId
        ? storeDirOf(previous)
        : undefined;
    // Nothing changed since the previous checkpoint: name its directory (decision 0171).
    if (
      previous !== undefined &&
      baseId !== undefined &&
      store.unchangedSince(target.uid, target.workdirPath, baseId)
    ) {
      // No quota check: the row adds no byte to the store (the quota counts each
      // directory once).
      await this.#confirm(target, options, undefined);
      const { files, dirs, bytes, skipped, mode } = previous;
      return this.#record(target, options, randomUUID(), baseId, {
        stats: { files, dirs, bytes, skipped },
        mode,
        prune: prune && full,
        signal,
      });
    }
    const measured = store.measure(target.uid, target.workdirPath, signal);
    await this.#checkQuota(target.uid, measured.bytes, signal);
    const checkpointId = randomUUID();
    const stats = await store.take(target.uid, target.workdirPath, checkpointId, signal, baseId);
    await this.#confirm(target, options, checkpointId);
    return this.#record(target, options, checkpointId, null, {
      stats,
      mode: store.mode,
      prune: prune && full,
      signal,
    });
  }

  /**
   * The thread's newest checkpoint, and whether one more would pass its
   * max_checkpoints_per_thread (only then does the take prune: one statement less per
   * checkpoint while the thread has room; two takes at once may leave one row over the
   * limit until the next take prunes it).
   */
  async #newest(target: CheckpointTarget) {
    const fallback = this.#deps.defaultMaxPerThread ?? DEFAULT_MAX_CHECKPOINTS_PER_THREAD;
    const [found] = await this.#deps.db
      .select({
        row: checkpoints,
        count: sql<string>`count(*) over ()`,
        limit: sql<string>`coalesce((select max_checkpoints_per_thread from user_limits
                                     where uid = ${target.uid}), ${fallback}::int)`,
      })
      .from(checkpoints)
      .where(and(eq(checkpoints.uid, target.uid), eq(checkpoints.threadId, target.threadId)))
      .orderBy(desc(checkpoints.createdAt), desc(checkpoints.checkpointId))
      .limit(1);
    return {
      previous: found?.row,
      full: found !== undefined && Number(found.count) + 1 > Number(found.limit),
    };
  }

  /** Asks the caller's lease (TakeOptions.confirm); lapsed: the copy goes, nothing is recorded. */
  async #confirm(
    target: CheckpointTarget,
    options: TakeOptions,
    copiedId: string | undefined,
  ): Promise<void> {
    if (options.confirm === undefined || (await options.confirm())) return;
    if (copiedId !== undefined) this.#removeBytes(target, copiedId);
    throw domainError("lease_lost", {
      message:
        "No checkpoint was taken: this node lost the Workdir's Execution Lease while copying (it did not renew it in time), so a command may have written meanwhile. Retry.",
    });
  }

  async #record(
    target: CheckpointTarget,
    options: TakeOptions,
    checkpointId: string,
    storeId: string | null,
    taken: { stats: TreeStats; mode: CheckpointRow["mode"]; prune: boolean; signal: AbortSignal },
  ): Promise<CheckpointRow> {
    const [row] = await this.#deps.db
      .insert(checkpoints)
      .values({
        checkpointId,
        uid: target.uid,
        threadId: target.threadId,
        runId: options.runId ?? null,
        label: options.label ?? null,
        source: options.source,
        workdirPath: target.workdirPath,
        nodeId: this.#deps.nodeId,
        mode: taken.mode,
        storeId,
        ...taken.stats,
      })
      .returning();
    if (row === undefined)
      throw new WorkcellError("internal", "The checkpoint row was not written.");
    if (taken.prune) await this.prune(target, taken.signal);
    return row;
  }

  /**
   * A manual checkpoint: waits (bounded) for the Workdir's Execution Lease behind the
   * command that is running, takes the checkpoint while holding it, and releases it, also
   * when the take fails. A command that arrives meanwhile waits for the copy.
   */
  takeUnderLease(
    target: CheckpointTarget,
    options: Omit<TakeOptions, "confirm">,
    signal: AbortSignal,
  ): Promise<CheckpointRow> {
    const { db, nodeId, logger } = this.#deps;
    const lease = { ...CHECKPOINT_LEASE_DEFAULTS, ...this.#deps.lease, db, nodeId, logger };
    return withCheckpointLease(lease, target, signal, (held) =>
      this.take(target, { ...options, confirm: held.confirm }, signal),
    );
  }

  /**
   * Restores checkpoint `checkpointId` of the thread into its Workdir after checkpointing
   * the current state (`saved`, source `restore`), so the restore itself can be undone.
   */
  async restore(
    target: CheckpointTarget,
    checkpointId: string,
    signal: AbortSignal,
  ): Promise<{ restored: CheckpointRow; saved: CheckpointRow }> {
    const restored = await this.find(target, checkpointId);
    if (restored === undefined) throw new WorkcellError("not_found", "No such checkpoint.");
    // Pruned only after the restore: the one being restored may be the oldest.
    const saved = await this.take(target, { source: "restore" }, signal, false);
    await restoreWorkdir(
      this.#deps.store,
      {
        restoreId: randomUUID(),
        uid: target.uid,
        workdirPath: target.workdirPath,
        checkpointId: storeDirOf(restored),
      },
      signal,
    );
    await this.prune(target, signal);
    this.#deps.logger.info(
      { uid: target.uid, checkpoint_id: checkpointId, saved: saved.checkpointId },
      "workdir restored",
    );
    return { restored, saved };
  }

  /**
   * Fills the new, empty managed Workdir `forkWorkdirPath` of the same uid with checkpoint
   * `checkpointId` of the thread, or with the thread's current Workdir. The copy adds to
   * the UserWorkspace, so it is checked against the quota first (nothing written if over).
   */
  async fork(
    target: CheckpointTarget,
    checkpointId: string | undefined,
    forkWorkdirPath: string,
    signal: AbortSignal,
  ): Promise<TreeStats> {
    const { store } = this.#deps;
    let bytes: number;
    let storeDir: string | undefined;
    if (checkpointId !== undefined) {
      const row = await this.find(target, checkpointId);
      if (row === undefined) throw new WorkcellError("not_found", "No such checkpoint.");
      bytes = row.bytes;
      storeDir = storeDirOf(row);
    } else {
      bytes = store.measure(target.uid, target.workdirPath, signal).bytes;
    }
    await this.#checkQuota(target.uid, bytes, signal);
    return forkWorkdir(store, { ...target, checkpointId: storeDir, forkWorkdirPath }, signal);
  }

  async #checkQuota(uid: string, bytes: number, signal: AbortSignal): Promise<void> {
    const [quota] = await executeRows<{ limit_bytes: string; used_bytes: string }>(
      this.#deps.db,
      sql`select coalesce((select workspace_bytes from user_limits where uid = ${uid}),
                          ${this.#deps.defaultWorkspaceBytes}::bigint)::text as limit_bytes,
                 coalesce((select sum(bytes) from (
                   select distinct on (coalesce(store_id, checkpoint_id)) bytes
                   from checkpoints where uid = ${uid}) dirs), 0)::text as used_bytes`,
    );
    const workspace = await this.#deps.workspaceBytes(uid, signal);
    const limit = Number(quota?.limit_bytes ?? 0);
    const total = workspace + Number(quota?.used_bytes ?? 0) + bytes;
    if (total > limit) {
      throw new WorkcellError(
        "quota_exceeded",
        "This would take your workspace and checkpoints over your quota (checkpoints count by their logical size): delete older checkpoints or files, or ask an administrator to raise your limits.",
        { details: { limit_bytes: limit, needed_bytes: total, adding_bytes: bytes } },
      );
    }
  }

  /** The thread's checkpoint `checkpointId`, only if it is the uid's and this thread's. */
  async find(target: Pick<CheckpointTarget, "uid" | "threadId">, checkpointId: string) {
    const [row] = await this.#deps.db
      .select()
      .from(checkpoints)
      .where(
        and(
          eq(checkpoints.checkpointId, checkpointId),
          eq(checkpoints.uid, target.uid),
          eq(checkpoints.threadId, target.threadId),
        ),
      );
    return row;
  }

  /** Keeps the newest max_checkpoints_per_thread of the thread; removes the rest, rows first. */
  async prune(
    target: Pick<CheckpointTarget, "uid" | "threadId">,
    _signal: AbortSignal,
  ): Promise<string[]> {
    const fallback = this.#deps.defaultMaxPerThread ?? DEFAULT_MAX_CHECKPOINTS_PER_THREAD;
    // A directory goes with its last row: a later checkpoint may still name it (0171).
    const removed = await executeRows<{ checkpoint_id: string; dir: string; named: boolean }>(
      this.#deps.db,
      sql`with gone as (
            delete from checkpoints where checkpoint_id in (
              select checkpoint_id from checkpoints
              where thread_id = ${target.threadId} and uid = ${target.uid}
              order by created_at desc, checkpoint_id desc
              offset coalesce((select max_checkpoints_per_thread from user_limits where uid = ${target.uid}),
                              ${fallback}::int))
            returning checkpoint_id, coalesce(store_id, checkpoint_id) as dir)
          select g.checkpoint_id, g.dir, exists (
              select 1 from checkpoints c
              where c.uid = ${target.uid} and c.checkpoint_id not in (select checkpoint_id from gone)
                and (c.checkpoint_id = g.dir or c.store_id = g.dir)) as named
          from gone g`,
    );
    for (const { dir, named } of removed) if (!named) this.#removeBytes(target, dir);
    return removed.map((row) => row.checkpoint_id);
  }

  /** The thread's checkpoints, newest first. */
  list(target: Pick<CheckpointTarget, "uid" | "threadId">) {
    return this.#deps.db
      .select()
      .from(checkpoints)
      .where(and(eq(checkpoints.uid, target.uid), eq(checkpoints.threadId, target.threadId)))
      .orderBy(desc(checkpoints.createdAt), desc(checkpoints.checkpointId));
  }

  #removeBytes(target: Pick<CheckpointTarget, "uid">, checkpointId: string): void {
    try {
      this.#deps.store.remove(target.uid, checkpointId);
    } catch (err) {
      // The row is gone: the reconciler removes the directory on its next pass.
      this.#deps.logger.warn(
        { err, checkpoint_id: checkpointId },
        "checkpoint directory not removed",
      );
    }
  }
}

/** The store directory holding a checkpoint's bytes (an earlier one's when it named it). */
export function storeDirOf(row: Pick<CheckpointRow, "checkpointId" | "storeId">): string {
  return row.storeId ?? row.checkpointId;
}
