import type { Logger } from "pino";
import type { ListenFn } from "../../../shared/listen/listen-fn.ts";

/** NOTIFYed (payload: the uid) whenever an Execution Lease row of that uid is deleted. */
export const EXECUTION_LEASE_CHANNEL = "workcell_execution_lease";

/**
 * One LISTEN per node on EXECUTION_LEASE_CHANNEL, fanned out to the commands of that uid
 * waiting here. A notification only shortens a wait: every waiter re-checks the table, and
 * polls anyway (a holder whose node died never notifies; its rows stop counting when its
 * run lease expires). Without a listen function, or when LISTEN fails, waits are polls.
 */
export class LeaseWakeups {
  readonly #listen: ListenFn | undefined;
  readonly #logger: Logger;
  readonly #waiters = new Map<string, Set<() => void>>();
  #unlisten: (() => Promise<void>) | undefined;

  constructor(deps: { readonly listen?: ListenFn; readonly logger: Logger }) {
    this.#listen = deps.listen;
    this.#logger = deps.logger;
  }

  async start(): Promise<void> {
    if (this.#listen === undefined || this.#unlisten !== undefined) return;
    try {
      this.#unlisten = await this.#listen(EXECUTION_LEASE_CHANNEL, (uid) => this.#wake(uid));
    } catch (error) {
      this.#logger.warn(
        { err: error },
        "LISTEN for execution lease releases failed; waiting commands poll instead",
      );
    }
  }

  async stop(): Promise<void> {
    const unlisten = this.#unlisten;
    this.#unlisten = undefined;
    await unlisten?.().catch((error: unknown) => {
      this.#logger.warn({ err: error }, "UNLISTEN for execution lease releases failed");
    });
  }

  /**
   * Resolves at the next release notified for `uid`, after `timeoutMs`, or when `signal`
   * aborts, whichever comes first; never rejects (the caller checks its signal).
   */
  next(uid: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.#waiters.get(uid) ?? new Set();
      this.#waiters.set(uid, set);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        set.delete(done);
        if (set.size === 0 && this.#waiters.get(uid) === set) this.#waiters.delete(uid);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      set.add(done);
      if (signal.aborted) done();
      else signal.addEventListener("abort", done, { once: true });
    });
  }

  #wake(uid: string): void {
    for (const done of [...(this.#waiters.get(uid) ?? [])]) done();
  }
}
