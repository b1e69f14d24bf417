import type { Logger } from "pino";

/**
 * Work of one sandbox manager that outlives the call that started it (a touch after an
 * exec, the destroy of an abandoned create, periodic passes). It lives on the instance,
 * never at module level, so settle() waits for this manager's work alone.
 */
export class BackgroundTasks {
  readonly #running = new Set<Promise<unknown>>();
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Keeps `work` until it settles; settle() waits for it. */
  track(work: Promise<unknown>): void {
    this.#running.add(work);
    const done = () => this.#running.delete(work);
    work.then(done, done);
  }

  /**
   * Runs `task` every `intervalMs` until `signal` aborts, never two passes of one task at
   * once (a slow pass skips ticks rather than piling up). A failed pass is logged; the
   * next tick tries again.
   */
  every(
    intervalMs: number,
    signal: AbortSignal,
    name: string,
    task: (signal: AbortSignal) => Promise<unknown>,
  ): void {
    let running = false;
    const timer = setInterval(() => {
      if (running || signal.aborted) return;
      running = true;
      this.track(
        task(signal)
          .catch((error: unknown) => {
            if (!signal.aborted) this.#logger.error({ err: error }, `${name} pass failed`);
          })
          .finally(() => {
            running = false;
          }),
      );
    }, intervalMs);
    timer.unref();
    signal.addEventListener("abort", () => clearInterval(timer), { once: true });
  }

  /** Waits for every tracked piece of work (including passes in progress) to settle. */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.#running]);
  }
}
