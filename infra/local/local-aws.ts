import { BucketAlreadyOwnedByYou, CreateBucketCommand, type S3Client } from "@aws-sdk/client-s3";
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";

/** Names of the local emulator's resources (the cloud ones come from SST). */
export const LOCAL_RUN_QUEUE = "workcell-runs";
export const LOCAL_RUN_DLQ = "workcell-runs-dlq";
export const LOCAL_ATTACHMENTS_BUCKET = "workcell-attachments";
/** Deliveries before a run message is parked in the DLQ (the sweeper re-dispatches). */
export const RUN_QUEUE_MAX_RECEIVE_COUNT = 5;

/** Creates (or finds) the run queue with its DLQ and the attachments bucket. Idempotent. */
export async function ensureLocalAwsResources(
  sqs: SQSClient,
  s3: S3Client,
): Promise<{
  runQueueUrl: string;
  deadLetterQueueUrl: string;
  attachmentsBucket: string;
}> {
  const dlq = await sqs.send(new CreateQueueCommand({ QueueName: LOCAL_RUN_DLQ }));
  if (!dlq.QueueUrl) throw new Error("the SQS emulator returned no dead-letter queue URL");
  const dlqArn = (
    await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ["QueueArn"] }),
    )
  ).Attributes?.QueueArn;
  const queue = await sqs.send(
    new CreateQueueCommand({
      QueueName: LOCAL_RUN_QUEUE,
      Attributes: {
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqArn,
          maxReceiveCount: RUN_QUEUE_MAX_RECEIVE_COUNT,
        }),
      },
    }),
  );
  if (!queue.QueueUrl) throw new Error("the SQS emulator returned no queue URL");
  try {
    await s3.send(new CreateBucketCommand({ Bucket: LOCAL_ATTACHMENTS_BUCKET }));
  } catch (error) {
    if (!(error instanceof BucketAlreadyOwnedByYou)) throw error;
  }
  return {
    runQueueUrl: queue.QueueUrl,
    deadLetterQueueUrl: dlq.QueueUrl,
    attachmentsBucket: LOCAL_ATTACHMENTS_BUCKET,
  };
}
