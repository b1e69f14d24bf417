import type { SandboxHandle } from "../sandbox-handle.ts";
import { PinSet } from "./pin-set.ts";
import type { SandboxContext } from "./sandbox-context.ts";

/** Makes a generation known to this process; an older entry it replaces is closed. */
export function register(ctx: SandboxContext, handle: SandboxHandle): void {
  const existing = ctx.live.get(handle.sandboxId);
  if (existing?.handle.generation === handle.generation && !existing.pins.closed) return;
  existing?.pins.finishClose();
  ctx.live.set(handle.sandboxId, { handle, pins: new PinSet() });
}

/**
 * Drops a generation this process knew, if it is still the one registered. Waiting and
 * future pins of it get "closed"; uses already in flight finish against its container.
 */
export function forget(ctx: SandboxContext, sandboxId: string, generation: number): void {
  const entry = ctx.live.get(sandboxId);
  if (entry?.handle.generation !== generation) return;
  entry.pins.finishClose();
  ctx.live.delete(sandboxId);
}
