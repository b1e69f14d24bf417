import type { Readable, Writable } from "node:stream";
import type { BodyGuard } from "./body-guard.ts";

export type BodyHooks = {
  /** False once the run is past its byte budget. */
  count(bytes: number): boolean;
  onBudget(): void;
  /** A forbidden placeholder was in the body: nothing holding it was passed on. */
  onPlaceholder(): void;
};

/**
 * Streams a request body upstream, counted, through `guard` when there is one (with
 * backpressure: the client is paused while the upstream is full).
 */
export function pipeBody(
  from: Readable,
  to: Writable,
  guard: BodyGuard | undefined,
  hooks: BodyHooks,
): void {
  if (guard === undefined) {
    from.on("data", (chunk: Buffer) => {
      if (!hooks.count(chunk.length)) hooks.onBudget();
    });
    from.pipe(to);
    return;
  }
  let stopped = false;
  from.on("data", (chunk: Buffer) => {
    if (stopped) return;
    if (!hooks.count(chunk.length)) {
      stopped = true;
      return hooks.onBudget();
    }
    const safe = guard.push(chunk);
    if (safe === undefined) {
      stopped = true;
      return hooks.onPlaceholder();
    }
    if (safe.length > 0 && !to.write(safe)) {
      from.pause();
      to.once("drain", () => from.resume());
    }
  });
  from.on("end", () => {
    if (!stopped) to.end(guard.end());
  });
}
