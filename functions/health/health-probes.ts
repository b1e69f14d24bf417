import { HeadBucketCommand, type S3Client } from "@aws-sdk/client-s3";
import { GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { sql } from "drizzle-orm";
import type { Db } from "../../shared/db/client.ts";

/** One dependency check: resolves when the dependency answers, rejects otherwise. */
export type HealthProbe = (signal: AbortSignal) => Promise<void>;

export type HealthProbes = { db: HealthProbe; queue: HealthProbe; storage: HealthProbe };

export type HealthProbeTargets = {
  db: Db;
  sqs: SQSClient;
  runQueueUrl: string;
  s3: S3Client;
  attachmentsBucket: string;
};

/**
 * Each probe is the cheapest real call to its dependency: one round trip that proves
 * the credentials, the network path and the named resource all exist.
 */
export function createHealthProbes(t: HealthProbeTargets): HealthProbes {
  return {
    db: async () => {
      await t.db.execute(sql`select 1`);
    },
    queue: async (signal) => {
      await t.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: t.runQueueUrl, AttributeNames: ["QueueArn"] }),
        { abortSignal: signal },
      );
    },
    storage: async (signal) => {
      await t.s3.send(new HeadBucketCommand({ Bucket: t.attachmentsBucket }), {
        abortSignal: signal,
      });
    },
  };
}
