/**
 * Fans one LISTEN channel's payloads (run ids) out to the callbacks registered for that
 * run id, so a process holds one LISTEN however many runs it watches. A callback may
 * remove itself (or others) while being called: each notify calls a snapshot.
 */
export class RunIdFanOut {
  readonly #byRunId = new Map<string, Set<() => void>>();

  /** Calls `callback` on every notify of `runId` until the returned function is called. */
  add(runId: string, callback: () => void): () => void {
    const set = this.#byRunId.get(runId) ?? new Set();
    this.#byRunId.set(runId, set);
    set.add(callback);
    return () => {
      set.delete(callback);
      if (set.size === 0 && this.#byRunId.get(runId) === set) this.#byRunId.delete(runId);
    };
  }

  notify(runId: string): void {
    for (const callback of [...(this.#byRunId.get(runId) ?? [])]) callback();
  }
}
