// The thread behind createOffThreadSqsSender (off-thread-sqs-sender.ts): its own SQS
// client, one SendMessageBatch per request from the main thread, each answered with
// SQS's result or the error's name and message.
import { parentPort, workerData } from "node:worker_threads";
import { SQSClient } from "@aws-sdk/client-sqs";
import { awsClientConfig } from "../../shared/aws/create-aws-clients.ts";
import type { SenderReply, SenderRequest, SenderThreadData } from "./off-thread-sqs-sender.ts";
import { sendBatchWith } from "./sqs-batch-send.ts";

const port = parentPort;
if (port === null) throw new Error("sqs-sender-thread.ts runs as a worker thread only");
const data = workerData as SenderThreadData;
const send = sendBatchWith(new SQSClient(awsClientConfig(data.aws, data.credentials)));
const inFlight = new Map<number, AbortController>();

port.on("message", (request: SenderRequest) => {
  if (request.type === "abort") {
    inFlight.get(request.id)?.abort(new DOMException("the caller gave up", "AbortError"));
    return;
  }
  const { id } = request;
  const controller = new AbortController();
  inFlight.set(id, controller);
  send(request.input, controller.signal)
    .then(
      (out): SenderReply => ({
        id,
        ok: true,
        // Only what the queue reads: the SDK's answer also holds $metadata.
        result: { Successful: out.Successful, Failed: out.Failed },
      }),
      (error: unknown): SenderReply => ({
        id,
        ok: false,
        error: {
          name: error instanceof Error ? error.name : "Error",
          message: error instanceof Error ? error.message : String(error),
        },
      }),
    )
    .then((reply) => {
      inFlight.delete(id);
      port.postMessage(reply);
    });
});
