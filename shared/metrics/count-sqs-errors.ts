import type { WorkcellMetrics } from "./workcell-metrics.ts";

/** The SQS calls Workcell makes, as the `operation` label of workcell_sqs_errors_total. */
export type SqsOperation = "receive" | "send" | "delete" | "visibility";

/**
 * Runs one SQS call and counts it in workcell_sqs_errors_total when it fails, unless the
 * caller gave up for a reason of its own (a shutdown aborting a long poll is no SQS
 * error); our own deadline (a TimeoutError) does count: SQS did not answer in time.
 */
export async function countSqsErrors<T>(
  metrics: Pick<WorkcellMetrics, "sqsErrors"> | undefined,
  operation: SqsOperation,
  signal: AbortSignal,
  call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const gaveUp = signal.aborted && (signal.reason as Error | undefined)?.name !== "TimeoutError";
    if (!gaveUp) metrics?.sqsErrors.inc({ operation });
    throw error;
  }
}
