import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from "@aws-sdk/client-sqs";

/**
 * Every run id on a run queue: received and deleted, 10 at a time, until it is empty.
 * Used to count what reached the queue (each committed run once, none lost).
 */
export async function drainRunIds(sqs: SQSClient, queueUrl: string): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const out = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 600,
      }),
    );
    const messages = out.Messages ?? [];
    if (messages.length === 0) return ids;
    for (const m of messages) ids.push((JSON.parse(m.Body ?? "{}") as { run_id: string }).run_id);
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
      }),
    );
  }
}
