import type { Logger } from "pino";
import { KeyedFanOut } from "../../../shared/listen/keyed-fan-out.ts";
import type { ListenFn } from "../../../shared/listen/listen-fn.ts";
import { ListenSubscription } from "../../../shared/listen/listen-subscription.ts";

/** NOTIFYed (payload: the uid) whenever an Execution Lease row of that uid is deleted. */
export const EXECUTION_LEASE_CHANNEL = "workcell_execution_lease";

/**
 * One LISTEN per node on EXECUTION_LEASE_CHANNEL, fanned out to the commands of that uid
 * waiting here. A notification only shortens a wait: every waiter re-checks the table, and
 * polls anyway (a holder whose node died never notifies; its rows stop counting when its
 * run lease expires). Without a listen function, or when LISTEN fails, waits are polls.
 */
export class LeaseWakeups {
  readonly #waiters = new KeyedFanOut();
  readonly #subscription: ListenSubscription;

  constructor(deps: { readonly listen?: ListenFn; readonly logger: Logger }) {
    this.#subscription = new ListenSubscription({
      listen: deps.listen,
      channel: EXECUTION_LEASE_CHANNEL,
      onPayload: (uid) => this.#waiters.notify(uid),
      logger: deps.logger,
      what: "execution lease releases",
      fallback: "waiting commands poll instead",
    });
  }

  start(): Promise<void> {
    return this.#subscription.start();
  }

  stop(): Promise<void> {
    return this.#subscription.stop();
  }

  /**
   * Resolves at the next release notified for `uid`, after `timeoutMs`, or when `signal`
   * aborts, whichever comes first; never rejects (the caller checks its signal).
   */
  next(uid: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    return this.#waiters.next(uid, timeoutMs, signal);
  }
}
