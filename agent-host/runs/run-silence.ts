import { abortable } from "../../shared/async/abortable.ts";

/**
 * What a run's heartbeat needs to know to outlast a database outage longer than its lease
 * (decision 0148), shared by its lease (run-lease.ts) and its commands (leased-commands.ts).
 *
 * A run with no command in the sandbox is *suspended* by a lease's worth of silence, not
 * stopped: nothing it could still do reaches anyone without the database (its events,
 * ending and change batches are fenced writes; its next command needs a granted lease), so
 * it may wait for the first heartbeat that answers, which re-checks the fence. A run with a
 * command in the sandbox is stopped as before: once its lease has expired in the database,
 * another command on the same root may be granted, so this one must not run on.
 */
export class RunSilence {
  #commands = 0;
  #suspended: PromiseWithResolvers<void> | undefined;

  /** True while a command of the run is between its lease arrival and its after-scan. */
  get busy(): boolean {
    return this.#commands > 0;
  }

  get suspended(): boolean {
    return this.#suspended !== undefined;
  }

  /**
   * Waits until the run is not suspended, then counts a command in (synchronously after the
   * last check, so no suspension falls between). Returns its idempotent leave.
   */
  async enter(signal: AbortSignal): Promise<() => void> {
    while (this.#suspended !== undefined) await abortable(this.#suspended.promise, signal);
    this.#commands += 1;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.#commands -= 1;
    };
  }

  /** The lease went silent with no command in flight: new commands wait. */
  suspend(): void {
    this.#suspended ??= Promise.withResolvers<void>();
  }

  /** A heartbeat answered and the fence held: commands may start again. */
  resume(): void {
    this.#suspended?.resolve();
    this.#suspended = undefined;
  }
}
