import type { Logger } from "pino";

/** One part of a clean stop, named for the log line that says it was abandoned. */
export type ShutdownStep = { readonly name: string; readonly run: () => Promise<unknown> };

export type BoundedShutdownOptions = {
  readonly logger: Logger;
  /** The whole clean stop may take this long; then the process exits anyway (code 1). */
  readonly deadlineMs: number;
  /** Run in order; one that throws is logged and the next runs. */
  readonly steps: readonly ShutdownStep[];
  /** Ends the process (tests pass their own). */
  readonly exit?: (code: number) => void;
  /** The log line that says a stop began (operators' log queries match it); default "shutting down". */
  readonly stoppingMessage?: string;
};

/**
 * SIGTERM and SIGINT stop the process in bounded time whatever it waits on (a database
 * that stopped answering, a request that never ends): the steps run in order, and when
 * the deadline passes first, or a second signal arrives, the process exits with code 1
 * after one log line naming the step it was in and the steps it never reached (issue 32
 * (3)). Returns the handler, for tests.
 */
export function onStopSignals(options: BoundedShutdownOptions): (signal: string) => void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const { logger } = options;
  let current: number | undefined;
  let ended = false;
  const abandon = (why: string) => {
    if (ended) return;
    ended = true;
    const at = current ?? 0;
    logger.error(
      {
        reason: why,
        abandoned: options.steps.slice(at).map((s) => s.name),
        deadline_ms: options.deadlineMs,
      },
      "shutdown did not finish; exiting with work abandoned",
    );
    exit(1);
  };
  const handler = (signal: string) => {
    if (current !== undefined) {
      abandon(`second ${signal}`);
      return;
    }
    current = 0;
    logger.info(
      { signal, deadline_ms: options.deadlineMs },
      options.stoppingMessage ?? "shutting down",
    );
    setTimeout(() => abandon("deadline passed"), options.deadlineMs).unref();
    void (async () => {
      for (; current < options.steps.length; current++) {
        const step = options.steps[current];
        if (step === undefined) break;
        try {
          await step.run();
        } catch (error) {
          logger.warn({ err: error, step: step.name }, "shutdown step failed; going on");
        }
        if (ended) return;
      }
      if (ended) return;
      ended = true;
      exit(0);
    })();
  };
  process.on("SIGINT", () => handler("SIGINT"));
  process.on("SIGTERM", () => handler("SIGTERM"));
  return handler;
}
