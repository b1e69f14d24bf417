/**
 * Settles with `work`, or rejects as soon as `signal` aborts: for waits and calls that
 * take no signal of their own (a shared promise, a drizzle query on postgres.js). The
 * work itself goes on (a query is ended by the server's statement_timeout), but nobody
 * waits for it past the signal. With `what`, the rejection says what did not answer;
 * without, it is the signal's reason.
 */
export function abortable<T>(work: PromiseLike<T>, signal: AbortSignal, what?: string): Promise<T> {
  const pending = Promise.resolve(work);
  const stopped = () => {
    pending.catch(() => {});
    return what === undefined ? signal.reason : stoppedError(what, signal);
  };
  if (signal.aborted) return Promise.reject(stopped());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(stopped());
    signal.addEventListener("abort", onAbort, { once: true });
    pending.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function stoppedError(what: string, signal: AbortSignal): Error {
  const reason = signal.reason as { name?: string } | undefined;
  return new Error(
    reason?.name === "TimeoutError" ? `${what} did not answer in time` : `${what} was stopped`,
    { cause: signal.reason },
  );
}
