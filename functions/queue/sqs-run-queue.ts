import { SendMessageBatchCommand, SendMessageCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { serializeQueueMessage } from "../../shared/contracts/queue-message.ts";
import type { RunQueue } from "./run-queue.ts";

/** SQS accepts at most this many entries per SendMessageBatch. */
export const SQS_MAX_BATCH_ENTRIES = 10;

/** The run queue on SQS (a standard queue; its DLQ is configured by infra). */
export function createSqsRunQueue(p: { sqs: SQSClient; queueUrl: string }): RunQueue {
  return {
    async dispatchRun(runId, signal) {
      await p.sqs.send(
        new SendMessageCommand({
          QueueUrl: p.queueUrl,
          MessageBody: serializeQueueMessage({ type: "run.dispatch", run_id: runId }),
        }),
        { abortSignal: signal },
      );
    },
    async dispatchRuns(runIds, signal) {
      const sent: string[] = [];
      const failed: string[] = [];
      for (let start = 0; start < runIds.length; start += SQS_MAX_BATCH_ENTRIES) {
        const chunk = runIds.slice(start, start + SQS_MAX_BATCH_ENTRIES);
        try {
          const out = await p.sqs.send(
            new SendMessageBatchCommand({
              QueueUrl: p.queueUrl,
              // Entry ids only need to be unique within the batch: the index is enough.
              Entries: chunk.map((runId, index) => ({
                Id: String(index),
                MessageBody: serializeQueueMessage({ type: "run.dispatch", run_id: runId }),
              })),
            }),
            { abortSignal: signal },
          );
          const ok = new Set((out.Successful ?? []).map((entry) => Number(entry.Id)));
          chunk.forEach((runId, index) => {
            (ok.has(index) ? sent : failed).push(runId);
          });
        } catch {
          // The whole batch failed (queue unreachable): nothing of it is on the queue.
          failed.push(...chunk);
        }
      }
      return { sent, failed };
    },
  };
}
