import {
  type MessageAttributeValue,
  SendMessageBatchCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { serializeQueueMessage } from "../../shared/contracts/queue-message.ts";
import type { RequestOrigin } from "../../shared/http/request-origin.ts";
import {
  REQUEST_ID_MESSAGE_ATTRIBUTE,
  traceMessageAttributes,
} from "../../shared/telemetry/message-attributes.ts";

/** What a batch send achieved: uids whose refresh is on the queue, and uids whose is not. */
export type RefreshEnqueueResult = {
  readonly sent: readonly string[];
  readonly failed: readonly string[];
};

/**
 * Queues `skills.refresh` messages for agent-hosts: the fan-out after a shared skill
 * changed, and the backstop when a synchronous refresh could not be completed. The message
 * body carries only the uid; the consumer re-reads the grants. Its attributes carry the
 * request it was sent for (`origin`): its id and W3C trace context, so the agent-host's
 * refresh continues that request's trace and its lines name it (docs/decisions/0069).
 */
export interface SkillRefreshQueue {
  /** Never throws for a partial failure: each uid ends up in `sent` or `failed`. */
  enqueueRefresh(
    uids: readonly string[],
    signal: AbortSignal,
    origin?: RequestOrigin,
  ): Promise<RefreshEnqueueResult>;
}

/** SQS accepts at most this many entries per SendMessageBatch. */
export const SQS_MAX_BATCH_ENTRIES = 10;

/** On the run queue (RUN_QUEUE_URL), whose message union includes `skills.refresh`. */
export function createSqsSkillRefreshQueue(p: {
  sqs: SQSClient;
  queueUrl: string;
}): SkillRefreshQueue {
  return {
    async enqueueRefresh(uids, signal, origin) {
      const attributes = originAttributes(origin);
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
                ...(attributes === undefined ? {} : { MessageAttributes: attributes }),
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

/** The origin's id and trace context as message attributes (none without an origin). */
function originAttributes(
  origin: RequestOrigin | undefined,
): Record<string, MessageAttributeValue> | undefined {
  if (origin === undefined) return undefined;
  return {
    ...traceMessageAttributes(origin.traceHeaders),
    [REQUEST_ID_MESSAGE_ATTRIBUTE]: { DataType: "String", StringValue: origin.requestId },
  };
}
