import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { destroyGeneration } from "./lifecycle/destroy-generation.ts";
import type { SandboxContext } from "./lifecycle/sandbox-context.ts";
import type { ReapWindow, SandboxRow } from "./lifecycle/sandbox-store.ts";

/** A reap window no running generation is idle for: eviction selects by release alone. */
const NEVER_IDLE_MS = 100 * 365 * 24 * 3600 * 1000;
/** Released at any time ago qualifies; a generation taken back meanwhile does not. */
export const WARM_AT_ANY_AGE: ReapWindow = { idleMs: NEVER_IDLE_MS, keepWarmMs: 0 };
/**
 * Evict-and-recount rounds with no warm generation destroyed before a create is refused:
 * concurrent creates evict the same oldest rows and recount, so a round may find its
 * victim already gone; only rounds that find nothing left to evict count.
 */
const MAX_FRUITLESS_ROUNDS = 3;

/** A create refused: the node's live sandboxes hold the whole tmpfs budget, none is warm. */
export type TmpfsBudgetRefusal = {
  ok: false;
  reason: "sandbox_memory_budget";
  budgetBytes: number;
  perSandboxBytes: number;
  live: number;
};

/** Bytes one generation's tmpfs mounts (/tmp and home) may pin in the host's memory. */
export function tmpfsBytesPerSandbox(ctx: Pick<SandboxContext, "config">): number {
  return ctx.config.tmpSizeBytes + ctx.config.homeSizeBytes;
}

/** How many generations the node's tmpfs budget holds, running and warm together. */
export function tmpfsCapacity(ctx: Pick<SandboxContext, "config">): number {
  return Math.floor(ctx.config.tmpfsBudgetBytes / tmpfsBytesPerSandbox(ctx));
}

/**
 * Warm rows in eviction order: released longest ago first, then the largest. Every
 * generation of a node reserves the same tmpfs sizes today, so "largest" only breaks ties
 * once generations carry their own sizes; the order is written down so that it holds then.
 */
export function evictionOrder(rows: readonly SandboxRow[]): SandboxRow[] {
  return rows
    .filter((r) => r.releasedAt !== null)
    .sort((a, b) => (a.releasedAt?.getTime() ?? 0) - (b.releasedAt?.getTime() ?? 0));
}

/**
 * Room for one more generation of `sandboxId` on this node within the tmpfs budget
 * (`SANDBOX_TMPFS_BUDGET_MB`, issue 37 item 1, decision 0142): every live generation of
 * the node (in use or kept warm, any process of the node) and every create in flight or
 * already admitted in this process counts at its tmpfs sizes. Over the budget, the oldest
 * warm generations are destroyed (fenced like a reap: only while still released and
 * unused); when none is left to evict the create is refused. A scope whose generation
 * already lives here needs no room (reuse, or a replace that destroys the old one first).
 * `admitted` is the manager's set of creates past this check and not yet settled: the
 * count and the admission happen with no await between them, so two acquires in this
 * process cannot both take the last room. `evicting` holds the warm generations another
 * admission of this process is destroying, so concurrent creates evict different rows
 * instead of all racing for the oldest one (seen as refusals under 100 concurrent new
 * threads, issue 41's throughput bench).
 */
export async function admitCreate(
  ctx: SandboxContext,
  sandboxId: string,
  admitted: Set<string>,
  signal: AbortSignal,
  evicting: Map<string, Promise<boolean>> = new Map(),
): Promise<{ ok: true; settle: () => void } | TmpfsBudgetRefusal> {
  const capacity = tmpfsCapacity(ctx);
  let live = 0;
  // Bounded: each fruitful round destroys a warm generation, of which there are finitely
  // many (at most the capacity at a time), and fruitless rounds are capped.
  let fruitless = 0;
  for (let round = 0; fruitless < MAX_FRUITLESS_ROUNDS && round < 4 * capacity + 8; round++) {
    signal.throwIfAborted();
    const rows = await ctx.store.runningRows(ctx.nodeId);
    if (rows.some((r) => r.sandboxId === sandboxId)) return { ok: true, settle: () => {} };
    const counted = new Set([...rows.map((r) => r.sandboxId), ...ctx.inflight.keys(), ...admitted]);
    counted.delete(sandboxId);
    live = counted.size;
    // The warm pool's blanks count like live sandboxes (decision 0185)…
    const pooled = ctx.driver.pool?.held() ?? 0;
    const over = live + pooled + 1 - capacity;
    if (over <= 0) {
      admitted.add(sandboxId);
      return { ok: true, settle: () => admitted.delete(sandboxId) };
    }
    // …and give way first: no one's warm sandbox is evicted to keep a blank.
    if (pooled > 0 && ((await ctx.driver.pool?.release(over)) ?? 0) > 0) continue;
    const warm = evictionOrder(rows);
    const victims = warm.filter((r) => !evicting.has(r.sandboxId)).slice(0, over);
    // Nothing warm at all: evicting cannot make room (the refusal below).
    if (warm.length === 0) break;
    if (victims.length === 0) {
      // Every warm row is being evicted by another create: recount once one of them is gone.
      fruitless++;
      await Promise.race(warm.map((r) => evicting.get(r.sandboxId)));
      continue;
    }
    for (const row of victims) {
      const destroyed = destroyGeneration(ctx, row.sandboxId, row.generation, signal, {
        idle: WARM_AT_ANY_AGE,
      }).finally(() => evicting.delete(row.sandboxId));
      evicting.set(
        row.sandboxId,
        destroyed.then(
          () => true,
          () => false,
        ),
      );
    }
    const outcomes = await Promise.all(victims.map((r) => evicting.get(r.sandboxId)));
    // A destroy that failed (Docker or the database away) made no room: not progress.
    if (!outcomes.includes(true)) fruitless++;
  }
  return {
    ok: false,
    reason: "sandbox_memory_budget",
    budgetBytes: ctx.config.tmpfsBudgetBytes,
    perSandboxBytes: tmpfsBytesPerSandbox(ctx),
    live,
  };
}

/** The refusal in the catalogue's words: nothing ran, and what to change. */
export function tmpfsBudgetError(refusal: TmpfsBudgetRefusal): WorkcellError {
  const mib = (bytes: number) => Math.floor(bytes / (1024 * 1024));
  return new WorkcellError(
    "unavailable",
    `This node's live sandboxes already hold its sandbox tmpfs budget (${refusal.live} sandboxes in ${mib(refusal.budgetBytes)} MiB at ${mib(refusal.perSandboxBytes)} MiB each for /tmp and home) and none is kept warm to evict: nothing of this run ran. Retry when another run ends, or raise SANDBOX_TMPFS_BUDGET_MB.`,
    {
      details: {
        reason: refusal.reason,
        live_sandboxes: refusal.live,
        budget_bytes: refusal.budgetBytes,
        per_sandbox_bytes: refusal.perSandboxBytes,
      },
    },
  );
}
