/**
 * Runs `check` (a test's after-the-fact assertion), then `cleanup` whether or not the check
 * threw: the afterEach of a fixture that must fail loudly yet never leak its resources.
 */
export async function checkThenCleanup(
  check: () => void,
  cleanup: () => Promise<void>,
): Promise<void> {
  try {
    check();
  } finally {
    await cleanup();
  }
}
