/**
 * Fans one LISTEN channel's payloads (a run id, a uid) out to the callbacks registered for
 * that key, so a process holds one LISTEN however many runs or commands wait on it. A
 * callback may remove itself (or others) while being called: each notify calls a snapshot.
 */
export class KeyedFanOut {
  readonly #byKey = new Map<string, Set<() => void>>();

  /** Calls `callback` on every notify of `key` until the returned function is called. */
  add(key: string, callback: () => void): () => void {
    const set = this.#byKey.get(key) ?? new Set();
    this.#byKey.set(key, set);
    set.add(callback);
    return () => {
      set.delete(callback);
      if (set.size === 0 && this.#byKey.get(key) === set) this.#byKey.delete(key);
    };
  }

  notify(key: string): void {
    for (const callback of [...(this.#byKey.get(key) ?? [])]) callback();
  }

  /** Calls every callback of every key (a LISTEN re-established: any payload may be lost). */
  notifyAll(): void {
    for (const key of [...this.#byKey.keys()]) this.notify(key);
  }

  /**
   * Resolves at the next notify of `key`, after `timeoutMs`, or when `signal` aborts,
   * whichever comes first; never rejects (the caller checks its signal). `onWaiting` is
   * called once the wait is registered: a notify from then on ends it.
   */
  next(key: string, timeoutMs: number, signal: AbortSignal, onWaiting?: () => void) {
    return new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const remove = this.add(key, () => done());
      const timer = setTimeout(() => done(), timeoutMs);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        remove();
        resolve();
      };
      signal.addEventListener("abort", done, { once: true });
      onWaiting?.();
    });
  }
}
