import { and, desc, eq, getTableColumns, inArray, isNotNull, lt, or, sql } from "drizzle-orm";
import type { Db, DbOrTransaction, DbTransaction } from "../../../shared/db/client.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { PG_LOCK_NOT_AVAILABLE, sqlStateOf } from "../../../shared/db/pg-error.ts";
import { nodes } from "../../../shared/db/schema/nodes.ts";
import {
  nextSandboxGeneration,
  type Sandbox,
  sandboxes,
} from "../../../shared/db/schema/sandboxes.ts";
import type { FileView } from "../../../shared/paths/file-view.ts";
import { nodeIsLost } from "../../../shared/runs/node-liveness.ts";

// The Postgres half of the lifecycle. Every write that changes a sandbox's fate is a
// conditional update on (sandbox_id, generation, state): a caller acting on a
// generation it observed earlier changes nothing if that generation is no longer the
// current one (docs/architecture.md §4.3). Times are compared with the database's now(), so
// the agent-hosts sharing it never disagree about "idle" because their clocks do.

/**
 * Two-int advisory keys (namespace, hashtext(sandbox_id)). The two-int key space is
 * separate from single-bigint locks (uid+scope, skill grants), and this namespace is
 * distinct from the migrator's (infra/db/migrate.ts).
 */
export const SANDBOX_LOCK_NAMESPACE = 0x57435342; // "WCSB"

export type SandboxRow = Sandbox;

/** A row of this node plus whether it has sat in 'destroying' for too long. */
export type ReconcileRow = SandboxRow & { destroyingStale: boolean };

export type NewGeneration = {
  sandboxId: string;
  uid: string;
  runtimeScopeId: string;
  workdirPath: string;
  nodeId: string;
  fileView: FileView;
};

/** The lock wait's statement_timeout exceeds its lock_timeout by this, so lock_timeout decides. */
const LOCK_STATEMENT_MARGIN_MS = 5_000;

/** How long an acquire waits for a sandbox's lock: behind a full create and a few decisions. */
export function sandboxLockWaitMs(createTimeoutMs: number): number {
  return 2 * createTimeoutMs;
}

/**
 * The longest statement this store runs (the lock wait, its statement_timeout raised): a
 * connection silent for longer has stalled (decision 0167).
 */
export function sandboxLockStatementMs(createTimeoutMs: number): number {
  return sandboxLockWaitMs(createTimeoutMs) + LOCK_STATEMENT_MARGIN_MS;
}

function lockKey(sandboxId: string) {
  return sql`${SANDBOX_LOCK_NAMESPACE}::int4, hashtext(${sandboxId})`;
}

function olderThan(
  column: typeof sandboxes.lastUsedAt | typeof sandboxes.updatedAt | typeof sandboxes.releasedAt,
  ms: number,
) {
  return lt(column, sql`now() - (${ms}::bigint * interval '1 millisecond')`);
}

/**
 * When the idle reaper may destroy a running generation: unused for `idleMs`, or released
 * by its ended execution tree (keep-warm) for `keepWarmMs`.
 */
export type ReapWindow = { readonly idleMs: number; readonly keepWarmMs: number };

function reapable(idle: ReapWindow) {
  return or(
    olderThan(sandboxes.lastUsedAt, idle.idleMs),
    and(isNotNull(sandboxes.releasedAt), olderThan(sandboxes.releasedAt, idle.keepWarmMs)),
  );
}

/** A locked call's value, or `locked: false` when the lock was not had (nothing ran). */
export type Locked<T> = { locked: true; value: T } | { locked: false };

/**
 * Which running generation a destroy may claim: any, one still reapable (the reaper's
 * re-check), or one still released by its ended tree (a kept-warm replace).
 */
export type DestroyCondition = ReapWindow | "released";

export class SandboxStore {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /**
   * Runs `fn` in a transaction holding the sandbox's advisory lock. The lock is what
   * makes N acquires across processes produce one create: whoever holds it decides and
   * creates; the others wait, then find the result. It is a transaction lock, so a
   * crashed holder (kill -9, lost connection) releases it, and everything it wrote is
   * rolled back with it: a container it had started is then orphaned, never adopted,
   * and the reconciler removes it. `{locked: false}` when the lock stayed held for
   * `lockTimeoutMs` (nothing ran). `fn` must use `tx` alone: a statement on another
   * pooled connection may wait for this transaction's own connection (issue 32).
   */
  async withSandboxLock<T>(
    sandboxId: string,
    lockTimeoutMs: number,
    fn: (tx: DbTransaction) => Promise<T>,
  ): Promise<Locked<T>> {
    try {
      return await this.#db.transaction(async (tx) => {
        // Free (a new thread's sandbox nearly always is): taken in one round trip, with no
        // timeout to set and reset around a wait (decision 0186).
        if (await tryAdvisoryXactLock(tx, sandboxId)) {
          return { locked: true, value: await fn(tx) } as const;
        }
        await tx.execute(sql`select set_config('lock_timeout', ${`${lockTimeoutMs}ms`}, true)`);
        // The wait may be longer than the connection's statement_timeout (DB_STATEMENT_TIMEOUT_SECONDS).
        await tx.execute(
          sql`select set_config('statement_timeout', ${`${lockTimeoutMs + LOCK_STATEMENT_MARGIN_MS}ms`}, true)`,
        );
        await tx.execute(sql`select pg_advisory_xact_lock(${lockKey(sandboxId)})`);
        await tx.execute(sql`select set_config('lock_timeout', '0', true)`);
        await tx.execute(sql`set local statement_timeout to default`);
        return { locked: true, value: await fn(tx) } as const;
      });
    } catch (error) {
      // Only the lock wait sets lock_timeout: `fn` runs with it reset to 0 (none).
      if (sqlStateOf(error) !== PG_LOCK_NOT_AVAILABLE) throw error;
      return { locked: false };
    }
  }

  /** Like withSandboxLock, but gives up at once (undefined) when someone holds the lock. */
  withSandboxLockIfFree<T>(
    sandboxId: string,
    fn: (tx: DbTransaction) => Promise<T>,
  ): Promise<Locked<T>> {
    return this.#db.transaction(async (tx) => {
      if (!(await tryAdvisoryXactLock(tx, sandboxId))) return { locked: false };
      return { locked: true, value: await fn(tx) };
    });
  }

  /**
   * The node's state, read with FOR KEY SHARE so that quiesce (SELECT … FOR UPDATE on
   * the same row) waits for every create in flight on any process of the node, and no
   * create starts after it: "drain, then refuse" is one row lock (§4.4).
   */
  async nodeStateForCreate(tx: DbTransaction, nodeId: string): Promise<string | undefined> {
    const [row] = await tx
      .select({ state: nodes.state })
      .from(nodes)
      .where(eq(nodes.nodeId, nodeId))
      .for("key share");
    return row?.state;
  }

  async setNodeState(nodeId: string, state: "active" | "quiesced"): Promise<boolean> {
    return this.#db.transaction(async (tx) => {
      const [row] = await tx
        .select({ nodeId: nodes.nodeId })
        .from(nodes)
        .where(eq(nodes.nodeId, nodeId))
        .for("update");
      if (!row) return false;
      await tx.update(nodes).set({ state }).where(eq(nodes.nodeId, nodeId));
      return true;
    });
  }

  /** True when `nodeId` is lost (no heartbeat for `nodeTtlMs`, or stopped) or has no row. */
  async isNodeLost(db: DbOrTransaction, nodeId: string, nodeTtlMs: number): Promise<boolean> {
    const [row] = await db
      .select({ lost: sql<boolean>`${nodeIsLost(nodeTtlMs)}` })
      .from(nodes)
      .where(eq(nodes.nodeId, nodeId));
    return row === undefined || row.lost;
  }

  async read(db: DbOrTransaction, sandboxId: string): Promise<SandboxRow | undefined> {
    const [row] = await db.select().from(sandboxes).where(eq(sandboxes.sandboxId, sandboxId));
    return row;
  }

  /**
   * Allocates a new generation from the global sequence: insert for a first create,
   * conditional update of the observed generation for a re-create. Undefined when the
   * row moved on meanwhile (not expected under the sandbox lock; fenced anyway).
   */
  async claimGeneration(
    tx: DbTransaction,
    observed: SandboxRow | undefined,
    values: NewGeneration,
  ): Promise<number | undefined> {
    const fresh = {
      uid: values.uid,
      runtimeScopeId: values.runtimeScopeId,
      workdirPath: values.workdirPath,
      nodeId: values.nodeId,
      fileView: values.fileView,
      state: "creating" as const,
      instanceId: null,
      lastUsedAt: sql`now()`,
      updatedAt: sql`now()`,
      // A new generation is in use from its first moment: the keep-warm mark of the one it
      // replaces must not make it look warm to the eviction and the reaper (decision 0175).
      releasedAt: null,
    };
    const [row] = observed
      ? await tx
          .update(sandboxes)
          .set({ ...fresh, generation: nextSandboxGeneration() })
          .where(
            and(
              eq(sandboxes.sandboxId, values.sandboxId),
              eq(sandboxes.generation, observed.generation),
            ),
          )
          .returning({ generation: sandboxes.generation })
      : await tx
          .insert(sandboxes)
          .values({ sandboxId: values.sandboxId, ...fresh })
          .onConflictDoNothing()
          .returning({ generation: sandboxes.generation });
    return row?.generation;
  }

  async markRunning(
    tx: DbTransaction,
    sandboxId: string,
    generation: number,
    instanceId: string,
  ): Promise<boolean> {
    const rows = await tx
      .update(sandboxes)
      .set({ state: "running", instanceId, lastUsedAt: sql`now()`, updatedAt: sql`now()` })
      .where(this.#current(sandboxId, generation, "creating"))
      .returning({ generation: sandboxes.generation });
    return rows.length === 1;
  }

  /** A create that failed, or a running sandbox whose container died or vanished. */
  async markFailed(
    db: DbOrTransaction,
    sandboxId: string,
    generation: number,
    from: "creating" | "running",
  ): Promise<boolean> {
    const rows = await db
      .update(sandboxes)
      .set({ state: "failed", updatedAt: sql`now()` })
      .where(this.#current(sandboxId, generation, from))
      .returning({ generation: sandboxes.generation });
    return rows.length === 1;
  }

  /**
   * Records a use; also the exec fence: false when this generation is no longer the
   * running one (destroyed, being destroyed, replaced).
   */
  async touch(db: DbOrTransaction, sandboxId: string, generation: number): Promise<boolean> {
    const rows = await db
      .update(sandboxes)
      .set({ lastUsedAt: sql`now()` })
      .where(this.#current(sandboxId, generation, "running"))
      .returning({ generation: sandboxes.generation });
    return rows.length === 1;
  }

  /**
   * A run takes this generation (warm reuse): the touch plus the end of any keep-warm
   * release, so the reaper's window no longer applies. Conditional like touch.
   */
  async takeForUse(db: DbOrTransaction, sandboxId: string, generation: number): Promise<boolean> {
    const rows = await db
      .update(sandboxes)
      .set({ lastUsedAt: sql`now()`, releasedAt: null })
      .where(this.#current(sandboxId, generation, "running"))
      .returning({ generation: sandboxes.generation });
    return rows.length === 1;
  }

  /**
   * The execution tree using this generation ended: keep it warm; the reaper destroys it
   * once it has been released for the keep-warm window. False when the generation is
   * no longer the running one (nothing to keep).
   */
  async release(db: DbOrTransaction, sandboxId: string, generation: number): Promise<boolean> {
    const rows = await db
      .update(sandboxes)
      .set({ releasedAt: sql`now()` })
      .where(this.#current(sandboxId, generation, "running"))
      .returning({ generation: sandboxes.generation });
    return rows.length === 1;
  }

  /**
   * running → destroying for exactly this generation; with a condition, only if it still
   * holds at this instant (atomic with the claim). Returns the container id to remove,
   * or undefined when the claim lost.
   */
  async claimDestroy(
    sandboxId: string,
    generation: number,
    condition?: DestroyCondition,
  ): Promise<{ instanceId: string | null } | undefined> {
    const fence = this.#current(sandboxId, generation, "running");
    const still =
      condition === undefined
        ? undefined
        : condition === "released"
          ? isNotNull(sandboxes.releasedAt)
          : reapable(condition);
    const [row] = await this.#db
      .update(sandboxes)
      .set({ state: "destroying", updatedAt: sql`now()` })
      .where(still === undefined ? fence : and(fence, still))
      .returning({ instanceId: sandboxes.instanceId });
    return row;
  }

  async markDestroyed(
    sandboxId: string,
    generation: number,
    db: DbOrTransaction = this.#db,
  ): Promise<boolean> {
    const rows = await db
      .update(sandboxes)
      .set({ state: "destroyed", updatedAt: sql`now()` })
      .where(this.#current(sandboxId, generation, "destroying"))
      .returning({ generation: sandboxes.generation });
    return rows.length === 1;
  }

  /** Running rows of a node the reaper may destroy (see ReapWindow), oldest first. */
  async idleRows(nodeId: string, idle: ReapWindow): Promise<SandboxRow[]> {
    return this.#db
      .select()
      .from(sandboxes)
      .where(and(eq(sandboxes.nodeId, nodeId), eq(sandboxes.state, "running"), reapable(idle)))
      .orderBy(sandboxes.lastUsedAt);
  }

  /**
   * Warm (released) generations on this node (of one uid, or of all) beyond the newest
   * `keep`, oldest first: what keep-warm eviction destroys (decision 0106).
   */
  async warmBeyond(nodeId: string, uid: string | undefined, keep: number): Promise<SandboxRow[]> {
    const warm = await this.#db
      .select()
      .from(sandboxes)
      .where(
        and(
          eq(sandboxes.nodeId, nodeId),
          uid === undefined ? undefined : eq(sandboxes.uid, uid),
          eq(sandboxes.state, "running"),
          isNotNull(sandboxes.releasedAt),
        ),
      )
      .orderBy(desc(sandboxes.releasedAt));
    return warm.slice(keep).reverse();
  }

  async runningRows(nodeId: string): Promise<SandboxRow[]> {
    return this.#db
      .select()
      .from(sandboxes)
      .where(and(eq(sandboxes.nodeId, nodeId), eq(sandboxes.state, "running")));
  }

  /** Rows the reconciler must look at: this node's live ones and any named by its containers. */
  async reconcileRows(
    db: DbOrTransaction,
    nodeId: string,
    sandboxIds: string[],
    destroyingStaleMs: number,
  ): Promise<ReconcileRow[]> {
    const live = and(
      eq(sandboxes.nodeId, nodeId),
      inArray(sandboxes.state, ["running", "destroying"]),
    );
    return this.#selectWithStale(db, destroyingStaleMs).where(
      sandboxIds.length === 0 ? live : or(live, inArray(sandboxes.sandboxId, sandboxIds)),
    );
  }

  async readForReconcile(
    tx: DbTransaction,
    sandboxId: string,
    destroyingStaleMs: number,
  ): Promise<ReconcileRow | undefined> {
    const [row] = await this.#selectWithStale(tx, destroyingStaleMs).where(
      eq(sandboxes.sandboxId, sandboxId),
    );
    return row;
  }

  #selectWithStale(db: DbOrTransaction, destroyingStaleMs: number) {
    const stale = olderThan(sandboxes.updatedAt, destroyingStaleMs);
    return db
      .select({
        ...getTableColumns(sandboxes),
        destroyingStale: sql<boolean>`(${sandboxes.state} = 'destroying' and ${stale})`,
      })
      .from(sandboxes);
  }

  #current(sandboxId: string, generation: number, state: SandboxRow["state"]) {
    return and(
      eq(sandboxes.sandboxId, sandboxId),
      eq(sandboxes.generation, generation),
      eq(sandboxes.state, state),
    );
  }
}

/** The sandbox's advisory lock for this transaction if no one holds it; never waits. */
async function tryAdvisoryXactLock(tx: DbTransaction, sandboxId: string): Promise<boolean> {
  const [row] = await executeRows<{ locked: boolean }>(
    tx,
    sql`select pg_try_advisory_xact_lock(${lockKey(sandboxId)}) as locked`,
  );
  return row?.locked === true;
}
