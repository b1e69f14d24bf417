import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { isTransientDatabaseError } from "../../../shared/db/transient-database-error.ts";

export interface BackgroundCleanupsDeps {
  readonly logger: Logger;
  /** Cleanups running at once; one more makes its caller (a worker slot) wait for room. */
  readonly concurrency: number;
  /** Attempts of one cleanup whose failure was a transient database error. */
  readonly attempts: number;
  /** Delay before the next attempt (doubled each time). */
  readonly retryDelayMs: number;
}

/** One attempt of a cleanup; it bounds itself (its own timeouts live inside). */
export type Cleanup = () => Promise<void>;

/**
 * Execution-tree cleanups run here, after the run's worker slot is free (issue 41,
 * decision 0158): the client has `run.completed` and the slot takes the next run while
 * the tree is released or destroyed. Bounded two ways: at most `concurrency` at once (a
 * caller past that waits in `start` for room, so a burst of endings holds slots again
 * rather than piling up sandboxes), and each cleanup bounds itself (tree wait + destroy
 * timeout). A transient database failure is retried; any other failure is logged for
 * the idle reaper and reconciler, which remove what a cleanup could not. `drain` is what
 * stop() awaits: no cleanup is lost when the worker stops.
 */
export class BackgroundCleanups {
  readonly #deps: BackgroundCleanupsDeps;
  readonly #running = new Set<Promise<void>>();
  /** Callers of start() waiting for room, in order. */
  readonly #waiting: Array<() => void> = [];

  constructor(deps: BackgroundCleanupsDeps) {
    this.#deps = deps;
  }

  /** Cleanups running now (tests and the log). */
  get running(): number {
    return this.#running.size;
  }

  /** Resolves once `cleanup` has started (at once unless `concurrency` are running). */
  async start(what: string, cleanup: Cleanup): Promise<void> {
    while (this.#running.size >= this.#deps.concurrency) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    const task = this.#attempt(what, cleanup).finally(() => {
      this.#running.delete(task);
      this.#waiting.shift()?.();
    });
    this.#running.add(task);
  }

  /** Waits for every started cleanup (and those waiting for room) to end. */
  async drain(): Promise<void> {
    while (this.#running.size > 0 || this.#waiting.length > 0) {
      await Promise.allSettled([...this.#running]);
      // A waiter woken by the last finally has started by the next microtask turn.
      await Promise.resolve();
    }
  }

  async #attempt(what: string, cleanup: Cleanup): Promise<void> {
    const { attempts, retryDelayMs, logger } = this.#deps;
    for (let n = 1; ; n++) {
      try {
        await cleanup();
        return;
      } catch (error) {
        if (n >= attempts || !isTransientDatabaseError(error)) {
          // The idle reaper and the reconciler remove what this could not.
          logger.error({ err: error, cleanup: what, attempts: n }, "background cleanup failed");
          return;
        }
        logger.warn({ err: error, cleanup: what, attempt: n }, "background cleanup retried");
        await sleep(retryDelayMs * 2 ** (n - 1));
      }
    }
  }
}
