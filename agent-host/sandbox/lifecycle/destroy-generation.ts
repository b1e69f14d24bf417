import type { FencedOutcome } from "../sandbox-handle.ts";
import { tierOfInstanceId } from "../sandbox-tier.ts";
import { forget } from "./live-registry.ts";
import { destroyKey, type SandboxContext } from "./sandbox-context.ts";
import type { ReapWindow } from "./sandbox-store.ts";

export type DestroyOptions = {
  /** Reaper mode: only if still reapable at the claim (idle or released), never while pinned. */
  idle?: ReapWindow;
  /**
   * Kept-warm replace (acquire): only if its tree's release still stands at the claim (no
   * run took it since), never while pinned.
   */
  releasedOnly?: boolean;
};

export type DestroyGenerationOutcome = FencedOutcome | { ok: false; reason: "in_use" };

/**
 * Destroys exactly one generation of a sandbox: the one path used by destroy, the idle
 * reaper and quiesce.
 *
 * Order matters. New pins are blocked first (so nothing new starts), then the row is
 * claimed running → destroying for this generation in one conditional update: if the
 * generation was replaced, destroyed or (reaper) touched in between, the claim changes
 * nothing and the close is called off, so an older generation can never destroy a
 * newer sandbox and a touched one is neither deleted nor forgotten (no ABA). Only a
 * won claim drains in-flight uses (bounded, then cancelled) and removes the container,
 * and the container removal itself re-checks the generation label.
 */
export async function destroyGeneration(
  ctx: SandboxContext,
  sandboxId: string,
  generation: number,
  signal: AbortSignal,
  options: DestroyOptions = {},
): Promise<DestroyGenerationOutcome> {
  const entry = ctx.live.get(sandboxId);
  const mine = entry?.handle.generation === generation ? entry : undefined;
  const log = ctx.logger.child({
    ...(mine === undefined ? {} : { uid: mine.handle.uid }),
    sandbox_id: sandboxId,
    generation,
  });
  if (mine) {
    // The reaper and a replace never wait for a busy sandbox: in use means not idle.
    const conditional = options.idle !== undefined || options.releasedOnly === true;
    if (conditional && mine.pins.pinned > 0) return { ok: false, reason: "in_use" };
    if (!mine.pins.beginClose()) {
      // Another closer of this generation is at work; whatever it decides, this
      // caller's generation is not live for it any more.
      await mine.pins.closeOutcome();
      return { ok: false, reason: "stale_generation" };
    }
  }

  let claim: Awaited<ReturnType<typeof ctx.store.claimDestroy>>;
  try {
    const condition = options.releasedOnly === true ? "released" : options.idle;
    claim = await ctx.store.claimDestroy(sandboxId, generation, condition);
  } catch (error) {
    mine?.pins.reopen();
    throw error;
  }
  if (!claim) {
    if (mine) await settleLostClaim(ctx, sandboxId, generation);
    return { ok: false, reason: "stale_generation" };
  }

  const key = destroyKey(sandboxId, generation);
  ctx.destroying.add(key);
  try {
    if (mine) {
      const held = await mine.pins.drain(ctx.config.drainTimeoutMs, ctx.config.killGraceMs * 2);
      if (held > 0) log.warn({ held }, "destroying with uses still in flight after cancel");
    }
    if (claim.instanceId !== null) {
      const removed = await ctx.driver.destroy(
        { instanceId: claim.instanceId, sandboxId, generation },
        signal,
      );
      if (removed.ok) ctx.metrics.sandboxDestroys.inc({ tier: tierOfInstanceId(claim.instanceId) });
      if (!removed.ok)
        log.error(
          { container_id: claim.instanceId },
          "row named a container of another generation",
        );
    }
    await ctx.store.markDestroyed(sandboxId, generation);
  } finally {
    // Whatever threw (engine down, database gone), the claim won: this generation is
    // 'destroying' and can never be used again, so the pin set closes for good and every
    // waiter (pin(), closeOutcome()) takes that answer instead of hanging. The reconciler
    // finishes the removal once the row is stale (destroyingStaleMs), or at once in the
    // pass after a tier outage (reconcile-node.ts: no destroy of it is in flight here).
    ctx.destroying.delete(key);
    if (mine) {
      mine.pins.finishClose();
      forget(ctx, sandboxId, generation);
    }
  }
  log.info({ reaped: options.idle !== undefined }, "sandbox destroyed");
  return { ok: true };
}

/**
 * The claim lost. If the generation is still the running one (the reaper lost to a
 * touch), the close is called off; otherwise the entry is dead and forgotten.
 */
async function settleLostClaim(ctx: SandboxContext, sandboxId: string, generation: number) {
  const entry = ctx.live.get(sandboxId);
  const mine = entry?.handle.generation === generation ? entry : undefined;
  if (!mine) return;
  // When in doubt (the read failed), keep the entry: every later use is fenced in
  // Postgres anyway, and the reconciler settles it.
  const row = await ctx.store.read(ctx.db, sandboxId).catch(() => "unknown" as const);
  if (row === "unknown" || (row?.generation === generation && row.state === "running")) {
    mine.pins.reopen();
    return;
  }
  mine.pins.finishClose();
  forget(ctx, sandboxId, generation);
}
