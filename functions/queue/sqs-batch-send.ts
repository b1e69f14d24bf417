import {
  SendMessageBatchCommand,
  type SendMessageBatchCommandInput,
  type SendMessageBatchResult,
  type SQSClient,
} from "@aws-sdk/client-sqs";

/** The part of SendMessageBatch's answer a run queue reads. */
export type SqsBatchResult = Pick<SendMessageBatchResult, "Successful" | "Failed">;

/**
 * One SendMessageBatch, bounded by `signal`: the seam between a run queue (entries, spans,
 * metrics) and whatever carries the call to SQS (this thread's client, or the sender
 * thread of off-thread-sqs-sender.ts on a long-lived runtime).
 */
export type SqsBatchSend = (
  input: SendMessageBatchCommandInput,
  signal: AbortSignal,
) => Promise<SqsBatchResult>;

/** SendMessageBatch through `sqs` on the calling thread. */
export function sendBatchWith(sqs: SQSClient): SqsBatchSend {
  return (input, signal) => sqs.send(new SendMessageBatchCommand(input), { abortSignal: signal });
}
