import type { Logger } from "pino";
import { KeyedFanOut } from "../../shared/listen/keyed-fan-out.ts";
import type { ListenFn } from "../../shared/listen/listen-fn.ts";
import { RUN_EVENTS_CHANNEL } from "../../shared/runs/run-channels.ts";
import type { RunEventWaiter } from "./run-event-waiter.ts";

export type NotifyRunEventWaiter = RunEventWaiter & { close(): Promise<void> };

/**
 * Wakes event streams on NOTIFY instead of waiting out their poll interval. One LISTEN
 * per process, started on first use and fanned out to the waiting streams by run id.
 * If LISTEN cannot be started the waiter degrades to plain polling (and says so once).
 */
export function createNotifyRunEventWaiter(p: {
  listen: ListenFn;
  logger: Logger;
  hooks?: {
    /** A stream now waits for `runId` with LISTEN up: a NOTIFY from here on wakes it (tests). */
    onWaiting?(runId: string): void;
  };
}): NotifyRunEventWaiter {
  const waiting = new KeyedFanOut();
  let listening: Promise<(() => Promise<void>) | undefined> | undefined;
  let up = false;

  const ensureListening = () => {
    listening ??= p
      .listen(
        RUN_EVENTS_CHANNEL,
        (runId) => waiting.notify(runId),
        // Each time LISTEN is (re)established: what was notified while it was down (or
        // before it was first up) is lost, so every waiting stream looks again now.
        () => waiting.notifyAll(),
      )
      .then((stop) => {
        up = true;
        return stop;
      })
      .catch((error: unknown) => {
        p.logger.warn({ err: error }, "LISTEN for run events failed; event streams poll instead");
        return undefined;
      });
    return listening;
  };

  return {
    async waitForEvents(runId, timeoutMs, signal) {
      await ensureListening();
      await waiting.next(runId, timeoutMs, signal, () => p.hooks?.onWaiting?.(runId));
    },
    watch(runId) {
      void ensureListening();
      let notified = false;
      let wake: (() => void) | undefined;
      const remove = waiting.add(runId, () => {
        notified = true;
        wake?.();
      });
      return {
        async wait(timeoutMs, signal) {
          // A LISTEN that is not up yet may miss a notification; polling covers it, as
          // for waitForEvents.
          await ensureListening();
          if (!notified && !signal.aborted) {
            await new Promise<void>((resolve) => {
              const done = () => {
                clearTimeout(timer);
                signal.removeEventListener("abort", done);
                wake = undefined;
                resolve();
              };
              const timer = setTimeout(done, timeoutMs);
              signal.addEventListener("abort", done, { once: true });
              wake = done;
              p.hooks?.onWaiting?.(runId);
            });
          }
          const outcome = notified ? "notified" : "timeout";
          notified = false;
          return outcome;
        },
        listening: () => up,
        close: remove,
      };
    },
    async close() {
      const stop = await listening;
      listening = undefined;
      up = false;
      await stop?.();
    },
  };
}
