// A submitter wired as the Node entry (batches made by a sender thread) that commits runs
// and then never flushes their dispatch batch (a linger of ten minutes): the parent test
// kills it with SIGKILL between commit and flush.
import { SQSClient } from "@aws-sdk/client-sqs";
import pino from "pino";
import postgres from "postgres";
import { Registry } from "prom-client";
import { createBatchingRunQueue } from "../../../functions/queue/batching-run-queue.ts";
import { createOffThreadSqsSender } from "../../../functions/queue/off-thread-sqs-sender.ts";
import { createSqsRunQueue } from "../../../functions/queue/sqs-run-queue.ts";
import { submitRun } from "../../../functions/runs/submit-run.ts";
import { createDb } from "../../../shared/db/client.ts";
import { createWorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";

const args = JSON.parse(process.argv[2] ?? "{}") as {
  dbUrl: string;
  endpoint: string;
  queueUrl: string;
  uid: string;
  count: number;
};
const sql = postgres(args.dbUrl, { max: 4, onnotice: () => {} });
const sqs = new SQSClient({
  endpoint: args.endpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
});
const sender = createOffThreadSqsSender({
  aws: { AWS_REGION: "us-east-1", AWS_ENDPOINT_URL: args.endpoint },
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
});
const TEN_MINUTES_MS = 600_000;
const runQueue = createBatchingRunQueue(
  createSqsRunQueue({ sqs, queueUrl: args.queueUrl, sendBatch: sender.send }),
  {
    lingerMs: TEN_MINUTES_MS,
    maxBatch: 10,
  },
);
const deps = {
  db: createDb(sql),
  runQueue,
  logger: pino({ level: "silent" }),
  queueSendTimeoutMs: TEN_MINUTES_MS,
  metrics: createWorkcellMetrics(new Registry()),
};
// Fewer than a full batch each time is never flushed; a full one would be, so stay below.
for (let i = 0; i < args.count; i++) {
  void submitRun(deps, {
    uid: args.uid,
    target: { kind: "new_thread" },
    input: `run ${i}`,
    agent: undefined,
    idempotencyKey: undefined,
  });
}
