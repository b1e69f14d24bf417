/**
 * Resolves after the event loop's next I/O phase (setImmediate). For background work
 * that follows something a client waits for: a response frame already handed to a
 * socket, say. Where the database runs in this thread (the local Workcell's PGlite),
 * each statement blocks the loop, so work started first would delay that frame by its
 * whole duration. Ordering for latency only; nothing may rely on it for correctness.
 */
export function yieldToIo(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
