import { SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { serializeQueueMessage } from "../../shared/contracts/queue-message.ts";

/** What a batch send achieved: uids whose refresh is on the queue, and uids whose is not. */
export type RefreshEnqueueResult = {
  readonly sent: readonly string[];
  readonly failed: readonly string[];
};

/**
 * Queues `skills.refresh` messages for agent-hosts: the fan-out after a shared skill
 * changed, and the backstop when a synchronous refresh could not be completed. The message
 * carries only the uid; the consumer re-reads the grants.
 */
export interface SkillRefreshQueue {
  /** Never throws for a partial failure: each uid ends up in `sent` or `failed`. */
  enqueueRefresh(uids: readonly string[], signal: AbortSignal): Promise<RefreshEnqueueResult>;
}

/** SQS accepts at most this many entries per SendMessageBatch. */
export const SQS_MAX_BATCH_ENTRIES = 10;

/** On the run queue (RUN_QUEUE_URL), whose message union includes `skills.refresh`. */
export function createSqsSkillRefreshQueue(p: {
  sqs: SQSClient;
  queueUrl: string;
}): SkillRefreshQueue {
  return {
    async enqueueRefresh(uids, signal) {
      const sent: string[] = [];
      const failed: string[] = [];
      for (let start = 0; start < uids.length; start += SQS_MAX_BATCH_ENTRIES) {
        const chunk = uids.slice(start, start + SQS_MAX_BATCH_ENTRIES);
        try {
          const out = await p.sqs.send(
            new SendMessageBatchCommand({
              QueueUrl: p.queueUrl,
              Entries: chunk.map((uid, index) => ({
                Id: String(index),
                MessageBody: serializeQueueMessage({ type: "skills.refresh", uid }),
              })),
            }),
            { abortSignal: signal },
          );
          const ok = new Set((out.Successful ?? []).map((entry) => Number(entry.Id)));
          chunk.forEach((uid, index) => {
            (ok.has(index) ? sent : failed).push(uid);
          });
        } catch {
          signal.throwIfAborted();
          failed.push(...chunk);
        }
      }
      return { sent, failed };
    },
  };
}
