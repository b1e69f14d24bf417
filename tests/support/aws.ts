import { randomBytes } from "node:crypto";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { CreateQueueCommand, SQSClient } from "@aws-sdk/client-sqs";
import { inject } from "vitest";

/** The emulator speaks the real wire protocol; these are the real SDK clients. */
export function awsConfig() {
  return {
    endpoint: inject("awsEndpoint"),
    region: "us-east-1",
    credentials: { accessKeyId: "test", secretAccessKey: "test" },
  };
}

export function sqsClient(): SQSClient {
  return new SQSClient(awsConfig());
}

export function s3Client(): S3Client {
  return new S3Client({ ...awsConfig(), forcePathStyle: true });
}

function uniqueName(prefix: string): string {
  return `${prefix}-${randomBytes(6).toString("hex")}`;
}

/** A queue no other test uses; returns its URL. */
export async function freshQueue(sqs: SQSClient = sqsClient(), prefix = "t"): Promise<string> {
  const out = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName(prefix) }));
  if (!out.QueueUrl) throw new Error("fauxqs returned no QueueUrl");
  return out.QueueUrl;
}

/** A bucket no other test uses; returns its name. */
export async function freshBucket(s3: S3Client = s3Client(), prefix = "t"): Promise<string> {
  const bucket = uniqueName(prefix);
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  return bucket;
}
