/**
 * Runs `work` with a signal that aborts with a TimeoutError (as AbortSignal.timeout's
 * does) after `ms`, and clears the timer once the work settles. AbortSignal.timeout's
 * timer fires even after the call it bounded has finished: on a hot path (one queue send
 * per submission) that is a DOMException and an abort event through every listener left
 * on the signal, seconds later, per call, and the listeners' closures kept alive until
 * then (docs/decisions/0087).
 */
export async function withDeadline<T>(
  ms: number,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException("The operation timed out.", "TimeoutError")),
    ms,
  );
  try {
    return await work(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}
