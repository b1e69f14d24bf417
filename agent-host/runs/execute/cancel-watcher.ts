import type { Logger } from "pino";
import { KeyedFanOut } from "../../../shared/listen/keyed-fan-out.ts";
import type { ListenFn } from "../../../shared/listen/listen-fn.ts";
import { ListenSubscription } from "../../../shared/listen/listen-subscription.ts";
import { RUN_CANCEL_CHANNEL } from "../../../shared/runs/run-channels.ts";

/**
 * One LISTEN per worker on the cancel channel, fanned out to the runs executing here by
 * run id. The control plane sets `cancel_requested` and NOTIFYs the run id in the same
 * transaction, so the notification arrives only once the flag is committed, and a run
 * notices a cancel within milliseconds instead of at its next heartbeat.
 *
 * Without a listen function, or when LISTEN fails, runs still notice cancels through
 * their heartbeat (which reads `cancel_requested`): slower, never lost.
 */
export class CancelWatcher {
  readonly #watchers = new KeyedFanOut();
  readonly #subscription: ListenSubscription;

  constructor(deps: { readonly listen?: ListenFn; readonly logger: Logger }) {
    this.#subscription = new ListenSubscription({
      listen: deps.listen,
      channel: RUN_CANCEL_CHANNEL,
      onPayload: (runId) => this.#watchers.notify(runId),
      logger: deps.logger,
      what: "run cancels",
      fallback: "runs notice cancels at their heartbeat instead",
    });
  }

  start(): Promise<void> {
    return this.#subscription.start();
  }

  stop(): Promise<void> {
    return this.#subscription.stop();
  }

  /** Calls `onCancel` when a cancel of `runId` is notified; the returned function stops it. */
  watch(runId: string, onCancel: () => void): () => void {
    return this.#watchers.add(runId, onCancel);
  }
}
