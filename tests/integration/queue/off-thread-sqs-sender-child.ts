// Sends two batches, one after the other, through an off-thread sender and prints SQS's
// answers, without ever closing the sender: the parent test checks that the process waits
// for each answer (the second is sent by a thread that is already up and idle) and then
// ends by itself.
import { createOffThreadSqsSender } from "../../../functions/queue/off-thread-sqs-sender.ts";

const args = JSON.parse(process.argv[2] ?? "{}") as { endpoint: string; queueUrl: string };
const sender = createOffThreadSqsSender({
  aws: { AWS_REGION: "us-east-1", AWS_ENDPOINT_URL: args.endpoint },
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
});
const successful: string[][] = [];
for (const runId of ["p", "q"]) {
  const out = await sender.send(
    {
      QueueUrl: args.queueUrl,
      Entries: [
        { Id: runId, MessageBody: JSON.stringify({ type: "run.dispatch", run_id: runId }) },
      ],
    },
    AbortSignal.timeout(30_000),
  );
  successful.push((out.Successful ?? []).map((entry) => entry.Id ?? ""));
}
process.stdout.write(JSON.stringify({ successful }));
