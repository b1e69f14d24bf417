import { tmpfsCapacity } from "../tmpfs-budget.ts";
import type { SandboxContext } from "./sandbox-context.ts";

/**
 * Refills the driver's warm pool (decision 0185) within the node's tmpfs budget
 * (decision 0142): a blank counts like a live sandbox, so only the room left by the
 * node's live generations, the creates in flight or admitted here and the blanks already
 * held is filled. Called off any run's path (tracked as background work); a failure is
 * logged and the next create simply builds in full.
 */
export async function refillPool(
  ctx: SandboxContext,
  admitted: ReadonlySet<string>,
  signal: AbortSignal,
): Promise<void> {
  const pool = ctx.driver.pool;
  if (!pool) return;
  try {
    const rows = await ctx.store.runningRows(ctx.nodeId);
    signal.throwIfAborted();
    const counted = new Set([...rows.map((r) => r.sandboxId), ...ctx.inflight.keys(), ...admitted]);
    const room = tmpfsCapacity(ctx) - counted.size - pool.held();
    if (room > 0) await pool.fill(room);
  } catch (error) {
    if (!signal.aborted) ctx.logger.warn({ err: error }, "sandbox pool refill failed");
  }
}
