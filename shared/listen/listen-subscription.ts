import type { Logger } from "pino";
import type { ListenFn } from "./listen-fn.ts";

export type ListenSubscriptionParams = {
  /** Absent: nothing is listened to (the service polls only). */
  readonly listen: ListenFn | undefined;
  readonly channel: string;
  readonly onPayload: (payload: string) => void;
  readonly logger: Logger;
  /** What the notifications are, for the log ("run cancels"). */
  readonly what: string;
  /** What happens instead when LISTEN fails, for the log. */
  readonly fallback: string;
};

/**
 * One LISTEN a long-lived service holds from start() to stop(), on a channel whose
 * notifications only hurry what the service finds anyway (by polling, at a heartbeat).
 * So it degrades instead of failing: without a listen function nothing is started, and a
 * LISTEN or UNLISTEN that fails is a warning saying what happens instead.
 */
export class ListenSubscription {
  readonly #p: ListenSubscriptionParams;
  #unlisten: (() => Promise<void>) | undefined;

  constructor(p: ListenSubscriptionParams) {
    this.#p = p;
  }

  /** Starts the LISTEN once; a second start while it is up does nothing. */
  async start(): Promise<void> {
    const { listen, channel, onPayload, logger, what, fallback } = this.#p;
    if (listen === undefined || this.#unlisten !== undefined) return;
    try {
      this.#unlisten = await listen(channel, onPayload);
    } catch (error) {
      logger.warn({ err: error }, `LISTEN for ${what} failed; ${fallback}`);
    }
  }

  async stop(): Promise<void> {
    const unlisten = this.#unlisten;
    this.#unlisten = undefined;
    await unlisten?.().catch((error: unknown) => {
      this.#p.logger.warn({ err: error }, `UNLISTEN for ${this.#p.what} failed`);
    });
  }
}
