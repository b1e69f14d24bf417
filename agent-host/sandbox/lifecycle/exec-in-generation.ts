import { DEFAULT_DATABASE_RETRY } from "../../../shared/db/database-retry.ts";
import { retryDatabaseWhile } from "../../../shared/db/retry-database-while.ts";
import type { ExecOutcome, ExecRequest, ExecResult } from "../driver.ts";
import { type SandboxHandle, STALE_GENERATION } from "../sandbox-handle.ts";
import { forget } from "./live-registry.ts";
import type { SandboxContext } from "./sandbox-context.ts";

export type ManagedExecOutcome =
  | { ok: true; result: ExecResult }
  | { ok: false; reason: "stale_generation" };

/**
 * Runs a command in the handle's generation; refused once that generation is over.
 * `track` keeps the closing touch, which the caller does not wait for.
 */
export async function execInGeneration(
  ctx: SandboxContext,
  track: (work: Promise<unknown>) => void,
  handle: SandboxHandle,
  request: ExecRequest,
  signal: AbortSignal,
): Promise<ManagedExecOutcome> {
  const { store, db } = ctx;
  const entry = ctx.live.get(handle.sandboxId);
  if (entry?.handle.generation !== handle.generation) return STALE_GENERATION;
  const pin = await entry.pins.pin();
  if (!pin) return STALE_GENERATION;
  try {
    // The touch is the cross-process fence (another agent-host process may have
    // destroyed this generation) and keeps the reaper away while the exec runs. The
    // driver prepares while it is in flight and starts the command only once it said
    // yes (decision 0083); it is awaited here too, so its refusal or error is ours.
    // A database that does not answer is waited for while the exec's signal holds (the
    // touch is idempotent; nothing has run before its yes), not turned into a failed
    // command (decision 0147).
    const fence = retryDatabaseWhile(
      ctx.databaseRetry ?? DEFAULT_DATABASE_RETRY,
      "sandbox exec fence",
      ctx.logger,
      signal,
      () => store.touch(db, handle.sandboxId, handle.generation),
    );
    fence.catch(() => {});
    const started = performance.now();
    let out: ExecOutcome;
    try {
      out = await ctx.driver.exec(
        entry.handle,
        request,
        AbortSignal.any([signal, pin.signal]),
        fence,
      );
    } catch (error) {
      // A generation over by the fence's word is stale, whatever went wrong meanwhile.
      if (!(await fence)) {
        forget(ctx, handle.sandboxId, handle.generation);
        return STALE_GENERATION;
      }
      throw error;
    }
    if (!(await fence) || (!out.ok && out.reason === "fenced")) {
      forget(ctx, handle.sandboxId, handle.generation);
      return STALE_GENERATION;
    }
    if (out.ok) {
      ctx.metrics.sandboxExecSeconds.observe(
        { tier: entry.handle.tier },
        (performance.now() - started) / 1000,
      );
    }
    if (!out.ok) {
      await store.markFailed(db, handle.sandboxId, handle.generation, "running");
      forget(ctx, handle.sandboxId, handle.generation);
      return STALE_GENERATION;
    }
    // Idle time counts from the end of the last use, not its start. Not awaited: it
    // only moves the idle clock (the start touch already fenced and marked the use),
    // so the caller does not pay a round trip for it; stop() waits for it.
    track(
      store.touch(db, handle.sandboxId, handle.generation).catch((error: unknown) => {
        ctx.logger.warn({ err: error, sandbox_id: handle.sandboxId }, "touch after exec failed");
      }),
    );
    return { ok: true, result: out.result };
  } finally {
    pin.release();
  }
}
