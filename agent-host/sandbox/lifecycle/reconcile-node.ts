import type { DbTransaction } from "../../../shared/db/client.ts";
import type { SandboxInstance } from "../driver.ts";
import { handleFromRow } from "../sandbox-handle.ts";
import { forget, register } from "./live-registry.ts";
import { destroyKey, type SandboxContext } from "./sandbox-context.ts";

export type ReconcileReport = {
  /** Live containers whose row and generation match: now known to this process. */
  adopted: string[];
  /** Containers removed: orphaned, stale generation, dead, or left by a crashed destroy. */
  destroyed: string[];
  /** Sandbox ids whose row was live but whose container is gone (marked failed/destroyed). */
  marked: string[];
  /** Containers left for the next round: their sandbox is being acquired or destroyed. */
  skipped: string[];
};

type Verdict = "adopted" | "destroyed" | "skipped";

export type ReconcileOptions = {
  /**
   * The pass after a sandbox tier outage (TierWatch): a 'destroying' row of this node
   * whose destroy is not in flight in this process was abandoned by a destroy the
   * outage cut off, so it is finished now rather than after destroyingStaleMs.
   */
  afterOutage?: boolean;
};

/**
 * Compares this node's labelled containers with Postgres and makes them agree
 * (docs/architecture.md §4.6): adopt what is live and owned, destroy what is orphaned or
 * stale, mark rows whose container vanished. Run on start and periodically.
 *
 * Each sandbox is judged under its advisory lock, taken only if free: a held lock means
 * an acquire is creating or reusing it right now (its rows are not committed yet, so a
 * container of a generation Postgres does not know may be a create in flight, not an
 * orphan). A create whose process died released that lock with its connection, and its
 * rolled-back generation makes the container an orphan, which is removed.
 */
export async function reconcileNode(
  ctx: SandboxContext,
  signal: AbortSignal,
  options: ReconcileOptions = {},
): Promise<ReconcileReport> {
  const report: ReconcileReport = { adopted: [], destroyed: [], marked: [], skipped: [] };
  const { config, nodeId, store } = ctx;
  const containers = await ctx.driver.list(nodeId, signal);
  const ids = [...new Set(containers.map((c) => c.sandboxId))];
  const rows = await store.reconcileRows(ctx.db, nodeId, ids, config.destroyingStaleMs);

  for (const c of containers) {
    signal.throwIfAborted();
    if (ctx.inflight.has(c.sandboxId)) {
      report.skipped.push(c.instanceId);
      continue;
    }
    const judged = await store.withSandboxLockIfFree(c.sandboxId, (tx) =>
      judgeContainer(ctx, tx, c, signal, options),
    );
    report[judged.locked ? judged.value : "skipped"].push(c.instanceId);
  }

  const present = new Set(containers.map((c) => `${c.sandboxId}/${c.generation}`));
  for (const row of rows) {
    if (row.nodeId !== nodeId || present.has(`${row.sandboxId}/${row.generation}`)) continue;
    if (ctx.inflight.has(row.sandboxId)) continue;
    const marked = await store.withSandboxLockIfFree(row.sandboxId, async (tx) => {
      // Re-read under the lock: the row may have moved on since the snapshot.
      const now = await store.read(tx, row.sandboxId);
      if (now?.generation !== row.generation) return false;
      if (now.state === "running") {
        const c = now.instanceId ? await ctx.driver.inspect(now.instanceId, signal) : undefined;
        if (c?.running) return false; // started after our listing
        if (c) await ctx.driver.destroy(c, signal);
        return store.markFailed(tx, now.sandboxId, now.generation, "running");
      }
      // 'destroying' with no container left: its destroyer died after the removal.
      return now.state === "destroying" && store.markDestroyed(now.sandboxId, now.generation, tx);
    });
    if (marked.locked && marked.value) {
      ctx.metrics.reconcilerActions.inc({ action: "mark_gone" });
      forget(ctx, row.sandboxId, row.generation);
      report.marked.push(row.sandboxId);
    }
  }

  await forgetDeadEntries(ctx);
  if (report.destroyed.length + report.marked.length > 0) {
    ctx.logger.info(report, "reconciled sandboxes");
  }
  return report;
}

async function judgeContainer(
  ctx: SandboxContext,
  tx: DbTransaction,
  c: SandboxInstance,
  signal: AbortSignal,
  options: ReconcileOptions,
): Promise<Verdict> {
  const row = await ctx.store.readForReconcile(tx, c.sandboxId, ctx.config.destroyingStaleMs);
  const current = row?.generation === c.generation && row.nodeId === ctx.nodeId ? row : undefined;
  if (current?.state === "running" && current.instanceId === c.instanceId) {
    const handle = handleFromRow(current);
    if (c.running && handle) {
      const known = ctx.live.get(c.sandboxId);
      // A generation this process already holds is not an action of the reconciler.
      if (known?.handle.generation !== c.generation || known.pins.closed) {
        ctx.metrics.reconcilerActions.inc({ action: "adopt" });
      }
      register(ctx, handle);
      return "adopted";
    }
    // Its keep-alive died (OOM, engine restart): the generation is over.
    await ctx.driver.destroy(c, signal);
    ctx.metrics.reconcilerActions.inc({ action: "destroy" });
    await ctx.store.markFailed(tx, c.sandboxId, c.generation, "running");
    forget(ctx, c.sandboxId, c.generation);
    return "destroyed";
  }
  // A destroy of this generation is draining its execs right now: let it finish.
  if (current?.state === "destroying" && !current.destroyingStale) {
    const abandoned =
      options.afterOutage === true && !ctx.destroying.has(destroyKey(c.sandboxId, c.generation));
    if (!abandoned) return "skipped";
  }
  // No row, another generation, another node, not live, or a destroyer that crashed.
  await ctx.driver.destroy(c, signal);
  ctx.metrics.reconcilerActions.inc({ action: "destroy" });
  if (current?.state === "destroying") await ctx.store.markDestroyed(c.sandboxId, c.generation, tx);
  forget(ctx, c.sandboxId, c.generation);
  return "destroyed";
}

/** Entries of generations that are no longer running (destroyed by another process). */
async function forgetDeadEntries(ctx: SandboxContext): Promise<void> {
  for (const [sandboxId, entry] of ctx.live) {
    // Re-read each one: an acquire may have registered it after our snapshot.
    const row = await ctx.store.read(ctx.db, sandboxId);
    if (row?.generation !== entry.handle.generation || row.state !== "running") {
      forget(ctx, sandboxId, entry.handle.generation);
    }
  }
}
