import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";
import { countSqsErrors } from "../../../shared/metrics/count-sqs-errors.ts";
import type { WorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import {
  CONSUMED_MESSAGE_ATTRIBUTES,
  requestIdOf,
  traceCarrierOf,
  traceMessageAttributes,
} from "../../../shared/telemetry/message-attributes.ts";
import type { ReceivedMessage, WorkQueue } from "./work-queue.ts";

export interface SqsWorkQueueOptions {
  readonly sqs: SQSClient;
  /** RUN_QUEUE_URL: `run.dispatch` (and `skills.refresh`) messages. */
  readonly queueUrl: string;
  /**
   * Where messages that can never succeed go (the queue's DLQ). Without it they are
   * deleted (deadLetter answers `dropped`): SQS has no "dead-letter now" call.
   */
  readonly deadLetterQueueUrl?: string;
  /** Failed calls are counted in workcell_sqs_errors_total{operation}. */
  readonly metrics?: Pick<WorkcellMetrics, "sqsErrors">;
}

/** The WorkQueue over SQS (fauxqs in tests and the local Workcell). */
export function createSqsWorkQueue(options: SqsWorkQueueOptions): WorkQueue {
  const { sqs, queueUrl, deadLetterQueueUrl, metrics } = options;
  const remove = (message: ReceivedMessage, signal: AbortSignal) =>
    countSqsErrors(metrics, "delete", signal, () =>
      sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: message.receipt }), {
        abortSignal: signal,
      }),
    ).then(() => undefined);
  return {
    async receive(request, signal) {
      const out = await countSqsErrors(metrics, "receive", signal, () =>
        sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: queueUrl,
            MaxNumberOfMessages: request.max,
            WaitTimeSeconds: request.waitSeconds,
            VisibilityTimeout: request.visibilityTimeoutSeconds,
            // The trace context of the submitting request (functions/queue/sqs-run-queue.ts),
            // and a `skills.refresh`'s request id (functions/skills/skill-refresh-queue.ts).
            MessageAttributeNames: [...CONSUMED_MESSAGE_ATTRIBUTES],
          }),
          { abortSignal: signal },
        ),
      );
      const received: ReceivedMessage[] = [];
      for (const m of out.Messages ?? []) {
        // A message without a receipt cannot be deleted or released: leave it to reappear.
        if (m.ReceiptHandle === undefined) continue;
        const traceCarrier = traceCarrierOf(m.MessageAttributes);
        const requestId = requestIdOf(m.MessageAttributes);
        received.push({
          messageId: m.MessageId,
          body: m.Body ?? "",
          receipt: m.ReceiptHandle,
          ...(traceCarrier === undefined ? {} : { traceCarrier }),
          ...(requestId === undefined ? {} : { requestId }),
        });
      }
      return received;
    },
    ack: remove,
    async release(message, signal) {
      await countSqsErrors(metrics, "visibility", signal, () =>
        sqs.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: queueUrl,
            ReceiptHandle: message.receipt,
            VisibilityTimeout: 0,
          }),
          { abortSignal: signal },
        ),
      );
    },
    async deadLetter(message, code, signal) {
      if (deadLetterQueueUrl !== undefined) {
        await countSqsErrors(metrics, "send", signal, () =>
          sqs.send(
            new SendMessageCommand({
              QueueUrl: deadLetterQueueUrl,
              MessageBody: message.body,
              MessageAttributes: { error_code: { DataType: "String", StringValue: code } },
            }),
            { abortSignal: signal },
          ),
        );
      }
      await remove(message, signal);
      return deadLetterQueueUrl === undefined ? "dropped" : "moved";
    },
    async send(body, delaySeconds, signal, traceCarrier) {
      const attributes =
        traceCarrier === undefined ? undefined : traceMessageAttributes(traceCarrier);
      await countSqsErrors(metrics, "send", signal, () =>
        sqs.send(
          new SendMessageCommand({
            QueueUrl: queueUrl,
            MessageBody: body,
            DelaySeconds: delaySeconds,
            ...(attributes === undefined ? {} : { MessageAttributes: attributes }),
          }),
          { abortSignal: signal },
        ),
      );
    },
  };
}
