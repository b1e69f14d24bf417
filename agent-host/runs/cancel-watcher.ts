import type { Logger } from "pino";
import type { ListenFn } from "../../shared/listen/listen-fn.ts";
import { RunIdFanOut } from "../../shared/listen/run-id-fan-out.ts";
import { RUN_CANCEL_CHANNEL } from "../../shared/runs/run-channels.ts";

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
  readonly #listen: ListenFn | undefined;
  readonly #logger: Logger;
  readonly #watchers = new RunIdFanOut();
  #unlisten: (() => Promise<void>) | undefined;

  constructor(deps: { readonly listen?: ListenFn; readonly logger: Logger }) {
    this.#listen = deps.listen;
    this.#logger = deps.logger;
  }

  async start(): Promise<void> {
    if (this.#listen === undefined || this.#unlisten !== undefined) return;
    try {
      this.#unlisten = await this.#listen(RUN_CANCEL_CHANNEL, (runId) =>
        this.#watchers.notify(runId),
      );
    } catch (error) {
      this.#logger.warn(
        { err: error },
        "LISTEN for run cancels failed; runs notice cancels at their heartbeat instead",
      );
    }
  }

  async stop(): Promise<void> {
    const unlisten = this.#unlisten;
    this.#unlisten = undefined;
    await unlisten?.().catch((error: unknown) => {
      this.#logger.warn({ err: error }, "UNLISTEN for run cancels failed");
    });
  }

  /** Calls `onCancel` when a cancel of `runId` is notified; the returned function stops it. */
  watch(runId: string, onCancel: () => void): () => void {
    return this.#watchers.add(runId, onCancel);
  }
}
