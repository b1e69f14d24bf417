/**
 * Re-checks an observable condition (a /proc entry, a file's content) until it holds,
 * yielding to the event loop between checks. Bounded by a deadline, never by a number of
 * checks: a loaded 2-core machine may need many more of them than a quiet one.
 */
export async function pollUntil(
  condition: () => Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      throw new Error(`condition not met within ${Math.round(timeoutMs / 1000)} s`);
    }
    await new Promise((r) => setImmediate(r));
  }
}
