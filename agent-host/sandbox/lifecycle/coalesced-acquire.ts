import { abortable } from "../../../shared/async/abortable.ts";
import { type AcquireRequest, type AcquireResult, acquireUnderLock } from "./acquire-sandbox.ts";
import { destroyGeneration } from "./destroy-generation.ts";
import type { InflightAcquire, SandboxContext } from "./sandbox-context.ts";

/** What a coalesced acquire needs from its manager besides the shared context. */
export type CoalesceDeps = {
  /** Read after waiting for another acquire: a quiesce may have begun meanwhile. */
  quiesced: () => boolean;
  /** Keeps work that outlives the call (the destroy of an abandoned create). */
  track: (work: Promise<unknown>) => void;
};

/**
 * One decision per scope at a time in this process: acquires for the same Workdir
 * share it; one for another Workdir waits for it and then decides for itself (and
 * finds the mismatch, unless that create failed).
 */
export async function acquireCoalesced(
  ctx: SandboxContext,
  deps: CoalesceDeps,
  id: string,
  request: AcquireRequest,
  signal: AbortSignal,
): Promise<AcquireResult> {
  const inflight = ctx.inflight;
  for (;;) {
    const pending = inflight.get(id);
    if (!pending) break;
    if (
      pending.workdirPath === request.workdirPath &&
      pending.tier === request.tier &&
      pending.fileView === request.fileView
    ) {
      // A follower: the create (if any) was the leader's.
      const shared = await waitShared(pending, signal);
      return shared.ok ? { ...shared, created: false } : shared;
    }
    await abortable(
      pending.done.catch(() => undefined),
      signal,
    );
  }
  if (deps.quiesced()) return { ok: false, reason: "node_quiesced" };
  const done = acquireUnderLock(ctx, id, request).finally(() => {
    if (inflight.get(id)?.done === done) inflight.delete(id);
  });
  // Callers may all stop waiting (abort); the outcome must still count as handled.
  done.catch(() => {});
  const entry: InflightAcquire = {
    workdirPath: request.workdirPath,
    tier: request.tier,
    fileView: request.fileView,
    done,
    waiting: 0,
  };
  inflight.set(id, entry);
  // A create nobody waits for any more (every caller cancelled while it ran) would
  // leave a live sandbox no run uses: it is destroyed as soon as it exists.
  void done.then(
    (out) => {
      if (entry.waiting === 0 && out.ok && out.created) {
        deps.track(
          destroyGeneration(
            ctx,
            id,
            out.handle.generation,
            AbortSignal.timeout(ctx.config.createTimeoutMs),
          ).catch((error: unknown) =>
            ctx.logger.warn(
              { err: error, sandbox_id: id },
              "could not destroy an abandoned create",
            ),
          ),
        );
      }
    },
    () => {},
  );
  return waitShared(entry, signal);
}

/** Waits for a shared acquire; a caller that aborts stops counting as waiting for it. */
async function waitShared(entry: InflightAcquire, signal: AbortSignal): Promise<AcquireResult> {
  entry.waiting++;
  try {
    return await abortable(entry.done, signal);
  } catch (error) {
    if (signal.aborted) entry.waiting--;
    throw error;
  }
}
