/** Bounds how many extraction processes one node runs at once. */
export interface ExtractionSlots {
  /** Waits for a free slot (or the abort of `signal`); the returned function frees it. */
  acquire(signal: AbortSignal): Promise<() => void>;
}

/**
 * A counting semaphore, first come first served. Each extraction child may take its whole
 * address-space cap, so the node's worst case is `max` × that cap: the bound that makes
 * "two hostile documents at once" cost two caps, not two documents' worth of memory.
 * Extractions over the cap wait rather than fail; the caller's signal ends the wait.
 */
export function createExtractionSlots(max: number): ExtractionSlots {
  let running = 0;
  const waiting: Array<() => void> = [];
  const release = (): void => {
    const next = waiting.shift();
    if (next === undefined) running--;
    else next();
  };
  return {
    acquire(signal) {
      signal.throwIfAborted();
      if (running < max) {
        running++;
        return Promise.resolve(once(release));
      }
      return new Promise((resolve, reject) => {
        const grant = (): void => {
          signal.removeEventListener("abort", onAbort);
          resolve(once(release));
        };
        const onAbort = (): void => {
          const index = waiting.indexOf(grant);
          if (index !== -1) waiting.splice(index, 1);
          reject(signal.reason);
        };
        waiting.push(grant);
        signal.addEventListener("abort", onAbort, { once: true });
      });
    },
  };
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
