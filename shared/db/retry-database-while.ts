import type { Logger } from "pino";
import { abortable } from "../async/abortable.ts";
import { type DatabaseRetry, type RetryState, retryDatabase } from "./database-retry.ts";

/** Marks the caller's abort inside the retry loop; never a transient database error. */
class StoppedBySignal extends Error {}

/**
 * `retryDatabase` for a statement on a command's path (decision 0147): also ended by the
 * caller's `signal` (the run stopped, the command was cancelled), which rejects with the
 * signal's own reason as soon as it aborts, never counted as one more transient failure
 * (a timeout signal's reason would look like one). The delay between two attempts is not
 * cut short (at most the policy's `maxDelayMs`).
 */
export async function retryDatabaseWhile<T>(
  retry: DatabaseRetry,
  what: string,
  logger: Logger,
  signal: AbortSignal,
  attempt: (signal: AbortSignal, state: RetryState) => Promise<T>,
): Promise<T> {
  const stopped = new StoppedBySignal(what);
  try {
    return await retryDatabase(retry, what, logger, async (attemptSignal, state) => {
      if (signal.aborted) throw stopped;
      try {
        return await abortable(attempt(attemptSignal, state), signal);
      } catch (error) {
        if (signal.aborted) throw stopped;
        throw error;
      }
    });
  } catch (error) {
    if (error === stopped) throw signal.reason;
    throw error;
  }
}
