/**
 * Waiting on a condition over state that changes on events (a chunk of output, an export
 * received), never by sleeping: `changed()` after each change re-checks every waiter.
 */
export type ConditionWaiters = {
  changed(): void;
  /** Resolves once `holds()` is true; rejects with `failure()`'s message after `timeoutMs`. */
  until(holds: () => boolean, timeoutMs: number, failure: () => string): Promise<void>;
};

export function conditionWaiters(): ConditionWaiters {
  const waiters = new Set<() => void>();
  return {
    changed() {
      for (const check of waiters) check();
    },
    until(holds, timeoutMs, failure) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!holds()) return;
          cleanup();
          resolve();
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(failure()));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
  };
}
