import { withDeadline } from "../../shared/async/with-deadline.ts";
import type { TraceContext } from "../../shared/telemetry/tracing.ts";
import type { RunQueue } from "./run-queue.ts";
import { SQS_MAX_BATCH_ENTRIES } from "./sqs-run-queue.ts";

export type BatchingRunQueueOptions = {
  /** How long the first dispatch of a batch waits for others before the batch is sent. */
  readonly lingerMs: number;
  /** Entries per send; SQS takes at most 10. */
  readonly maxBatch?: number;
  /** Bound on one batch send (each caller's own signal bounds its wait as well). */
  readonly sendTimeoutMs?: number;
};

/** The defaults of the long-lived runtimes (Node entry, local mode). */
export const DEFAULT_BATCH_LINGER_MS = 2;
export const DEFAULT_BATCH_SEND_TIMEOUT_MS = 10_000;

type Waiter = {
  readonly runId: string;
  /** The submitting request's trace: each entry of the batch carries its own. */
  readonly trace: TraceContext | undefined;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
};

/**
 * Micro-batches run dispatches on a long-lived runtime: concurrent submissions share one
 * SendMessageBatch (up to 10 entries, flushed after `lingerMs` or when full) instead of
 * paying one SQS round trip each. The semantics of `dispatchRun` are unchanged: it
 * resolves only once SQS accepted that run's message and throws when it did not, so the
 * submitter still clears `dispatched_at` for the sweeper on a failure, and a crash between
 * commit and flush loses nothing (the run is committed; the sweeper sends it). A caller's
 * signal that aborts before the flush takes its run out of the batch; after the flush it
 * cannot recall the message (duplicates are harmless: the claim is fenced by attempt).
 *
 * Not for Lambda or Workers: one request per instance means no batch forms there, and the
 * linger would only add latency; they use the plain queue.
 */
export function createBatchingRunQueue(
  inner: RunQueue,
  options: BatchingRunQueueOptions,
): RunQueue {
  const maxBatch = Math.min(options.maxBatch ?? SQS_MAX_BATCH_ENTRIES, SQS_MAX_BATCH_ENTRIES);
  // Per instance, not per module: each queue owns its pending batch.
  let pending: Waiter[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;

  const flush = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const batch = pending;
    pending = [];
    if (batch.length === 0) return;
    // Bounded like a single send: the batch's own timeout, not any one caller's signal.
    const traces = new Map<string, TraceContext>();
    for (const w of batch) if (w.trace !== undefined) traces.set(w.runId, w.trace);
    withDeadline(options.sendTimeoutMs ?? DEFAULT_BATCH_SEND_TIMEOUT_MS, (signal) =>
      inner.dispatchRuns(
        batch.map((w) => w.runId),
        signal,
        traces,
      ),
    ).then(
      (out) => {
        const sent = new Set(out.sent);
        for (const w of batch) {
          if (sent.has(w.runId)) w.resolve();
          else w.reject(new Error(`the queue did not accept run ${w.runId}`));
        }
      },
      (error: unknown) => {
        for (const w of batch) w.reject(error);
      },
    );
  };

  return {
    dispatchRun(runId, signal, trace) {
      signal.throwIfAborted();
      return new Promise<void>((resolve, reject) => {
        const waiter: Waiter = { runId, trace, resolve, reject };
        pending.push(waiter);
        signal.addEventListener(
          "abort",
          () => {
            // Still waiting for the flush: leave the batch. Already sent: nothing to undo.
            const index = pending.indexOf(waiter);
            if (index >= 0) {
              pending.splice(index, 1);
              reject(signal.reason);
            }
          },
          { once: true },
        );
        if (pending.length >= maxBatch) flush();
        else timer ??= setTimeout(flush, options.lingerMs);
      });
    },
    dispatchRuns: (runIds, signal, traces) => inner.dispatchRuns(runIds, signal, traces),
  };
}
