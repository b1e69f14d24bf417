/** How long and how often to re-check, and what to say when the deadline passes. */
export interface PollOptions<T = unknown> {
  /** What is awaited, for the timeout's error ("the run to end"). */
  readonly what?: string;
  /** Deadline for the whole wait; default 60 s. */
  readonly timeoutMs?: number;
  /** An absolute deadline (`performance.now()`), shared by several waits; wins over timeoutMs. */
  readonly deadlineAt?: number;
  /**
   * Pause between checks; default none, only a yield to the event loop. A check that
   * costs a round trip (a query, an HTTP call) sets one so it does not flood the server.
   */
  readonly intervalMs?: number;
  /** More words for the timeout's error: the last value read, a process's output. */
  readonly detail?: (last: T) => string;
}

/**
 * Reads a value until `ok` accepts it and returns that value. Bounded by a deadline,
 * never by a number of checks: a loaded 2-core machine may need many more of them than a
 * quiet one. The one poll loop of the suite (pollUntil is this with a boolean).
 */
export async function pollFor<T>(
  read: () => T | Promise<T>,
  ok: (value: T) => boolean,
  options: PollOptions<T> = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = options.deadlineAt ?? performance.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (performance.now() > deadline) {
      const what = options.what === undefined ? "condition" : options.what;
      const detail = options.detail === undefined ? "" : `: ${options.detail(value)}`;
      const within =
        options.deadlineAt === undefined
          ? `within ${Math.round(timeoutMs / 1000)} s`
          : "by its deadline";
      throw new Error(`${what} not met ${within}${detail}`);
    }
    await pause(options.intervalMs);
  }
}

/**
 * Re-checks an observable condition (a /proc entry, a file's content, a row) until it
 * holds. `options` may be just the deadline in milliseconds.
 */
export async function pollUntil(
  condition: () => boolean | Promise<boolean>,
  options: number | PollOptions<boolean> = {},
): Promise<void> {
  await pollFor(
    condition,
    (met) => met,
    typeof options === "number" ? { timeoutMs: options } : options,
  );
}

function pause(intervalMs: number | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (intervalMs === undefined) setImmediate(resolve);
    else setTimeout(resolve, intervalMs);
  });
}
