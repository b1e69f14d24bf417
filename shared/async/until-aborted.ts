/**
 * `promise`, or a rejection with `signal.reason` as soon as the signal aborts: for an
 * operation that takes no signal itself (a query on a connection that may have gone
 * silent). The operation is not stopped, only no longer waited for; its late rejection
 * is swallowed so it is never reported as unhandled.
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  promise.catch(() => {});
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
