import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import type { SQSClient } from "@aws-sdk/client-sqs";
import { afterEach, beforeEach, expect, it } from "vitest";
import {
  createOffThreadSqsSender,
  type OffThreadSqsSender,
} from "../../../functions/queue/off-thread-sqs-sender.ts";
import { sendBatchWith } from "../../../functions/queue/sqs-batch-send.ts";
import { createSqsRunQueue } from "../../../functions/queue/sqs-run-queue.ts";
import { awsConfig, freshQueue, sqsClient } from "../../support/aws.ts";
import { drainRunIds } from "../../support/drain-run-ids.ts";

// The Node entry's and local mode's SendMessageBatch on a thread of its own
// (functions/queue/off-thread-sqs-sender.ts, decision 0090): the same answers as the
// in-thread client, and every fault ends.

let sqs: SQSClient;
let queueUrl: string;
const opened: OffThreadSqsSender[] = [];

beforeEach(async () => {
  sqs = sqsClient();
  queueUrl = await freshQueue(sqs, "offthread");
});
afterEach(async () => {
  for (const sender of opened.splice(0)) await sender.close();
  sqs.destroy();
});

function senderTo(endpoint: string): OffThreadSqsSender {
  const { region, credentials } = awsConfig();
  const sender = createOffThreadSqsSender({
    aws: { AWS_REGION: region, AWS_ENDPOINT_URL: endpoint },
    credentials,
  });
  opened.push(sender);
  return sender;
}

const runIds = ["a", "b", "c"].map((s) => `00000000-0000-4000-8000-00000000000${s}`);

it("dispatches sent off-thread are on the queue, each once, and the answer names each entry", async () => {
  const sender = senderTo(awsConfig().endpoint);
  const queue = createSqsRunQueue({ sqs, queueUrl, sendBatch: sender.send });
  const out = await queue.dispatchRuns(runIds, AbortSignal.timeout(10_000));
  expect(out).toEqual({ sent: runIds, failed: [] });
  expect((await drainRunIds(sqs, queueUrl)).sort()).toEqual(runIds);
});

it("a batch SQS refuses fails every run with SQS's own error, as the in-thread client does, and sends nothing", async () => {
  const sender = senderTo(awsConfig().endpoint);
  const input = {
    QueueUrl: `${queueUrl}-does-not-exist`,
    Entries: [{ Id: "0", MessageBody: "{}" }],
  };
  const inThread = await sendBatchWith(sqs)(input, AbortSignal.timeout(10_000)).catch(
    (error: Error) => error,
  );
  const offThread = await sender
    .send(input, AbortSignal.timeout(10_000))
    .catch((error: Error) => error);
  expect(inThread).toBeInstanceOf(Error);
  expect(offThread).toBeInstanceOf(Error);
  expect({ name: (offThread as Error).name, message: (offThread as Error).message }).toEqual({
    name: (inThread as Error).name,
    message: (inThread as Error).message,
  });

  const queue = createSqsRunQueue({ sqs, queueUrl: input.QueueUrl, sendBatch: sender.send });
  expect(await queue.dispatchRuns(runIds, AbortSignal.timeout(10_000))).toEqual({
    sent: [],
    failed: runIds,
  });
  // The sender still works for the real queue, and nothing of the refused batches is on it.
  await sender.send(
    {
      QueueUrl: queueUrl,
      Entries: [{ Id: "0", MessageBody: JSON.stringify({ type: "run.dispatch", run_id: "x" }) }],
    },
    AbortSignal.timeout(10_000),
  );
  expect(await drainRunIds(sqs, queueUrl)).toEqual(["x"]);
});

/** An endpoint that takes each request and never answers; `arrived` once one has. */
async function silentEndpoint(): Promise<{
  url: string;
  arrived: Promise<void>;
  server: Server;
  sockets: Set<Socket>;
}> {
  const sockets = new Set<Socket>();
  let arrive: () => void = () => {};
  const arrived = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once("data", () => arrive());
    socket.once("close", () => sockets.delete(socket));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { url: `http://127.0.0.1:${address.port}`, arrived, server, sockets };
}

async function closeEndpoint(endpoint: { server: Server; sockets: Set<Socket> }): Promise<void> {
  for (const socket of endpoint.sockets) socket.destroy();
  await new Promise<void>((resolve) => endpoint.server.close(() => resolve()));
}

it("a caller that gives up while SQS is silent is answered with its reason, and the thread's call is cancelled", async () => {
  const endpoint = await silentEndpoint();
  try {
    const sender = senderTo(endpoint.url);
    const gaveUp = new AbortController();
    const sending = sender.send(
      { QueueUrl: `${endpoint.url}/000000000000/q`, Entries: [{ Id: "0", MessageBody: "{}" }] },
      gaveUp.signal,
    );
    await endpoint.arrived;
    gaveUp.abort(new Error("the request's deadline passed"));
    await expect(sending).rejects.toThrow("the request's deadline passed");
    // The thread aborted its HTTP call: the silent endpoint's socket is closed by it.
    while (endpoint.sockets.size > 0) await once([...endpoint.sockets][0] as Socket, "close");
    // An already aborted signal is refused before anything is sent.
    const already = AbortSignal.abort(new Error("gone before"));
    await expect(sender.send({ QueueUrl: queueUrl, Entries: [] }, already)).rejects.toThrow(
      "gone before",
    );
  } finally {
    await closeEndpoint(endpoint);
  }
});

it("close refuses the send the thread held, saying the batch may be on the queue, and every later send", async () => {
  const endpoint = await silentEndpoint();
  try {
    const sender = senderTo(endpoint.url);
    const sending = sender.send(
      { QueueUrl: `${endpoint.url}/000000000000/q`, Entries: [{ Id: "0", MessageBody: "{}" }] },
      AbortSignal.timeout(600_000),
    );
    await endpoint.arrived;
    await sender.close();
    await expect(sending).rejects.toMatchObject({
      name: "SenderThreadExited",
      message: expect.stringContaining("may or may not be on the queue"),
    });
    await expect(
      sender.send({ QueueUrl: queueUrl, Entries: [] }, AbortSignal.timeout(10_000)),
    ).rejects.toThrow("the SQS sender is closed");
  } finally {
    await closeEndpoint(endpoint);
  }
});

it("a send in flight keeps the process alive until SQS answers; an idle sender does not keep it", async () => {
  const child = spawn(
    process.execPath,
    [
      join(import.meta.dirname, "off-thread-sqs-sender-child.ts"),
      JSON.stringify({ endpoint: awsConfig().endpoint, queueUrl }),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let stdout = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  // The child never closes its sender: it ends only because the idle thread lets it.
  const [code] = (await once(child, "exit")) as [number | null];
  expect(code).toBe(0);
  expect(JSON.parse(stdout)).toEqual({ successful: [["p"], ["q"]] });
  expect((await drainRunIds(sqs, queueUrl)).sort()).toEqual(["p", "q"]);
});
