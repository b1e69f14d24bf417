import { PutObjectCommand } from "@aws-sdk/client-s3";
import { CreateQueueCommand } from "@aws-sdk/client-sqs";
import { afterEach, describe, expect, it } from "vitest";
import { createS3AttachmentObjectStore } from "../../../agent-host/attachments/s3-attachment-object-store.ts";
import { createSqsWorkQueue } from "../../../agent-host/runs/queue/sqs-work-queue.ts";
import { createCapabilityMinter } from "../../../functions/capability/create-capability-minter.ts";
import { createHttpDataPlaneClient } from "../../../functions/data-plane/http-data-plane-client.ts";
import { createHttpSkillsDataPlane } from "../../../functions/skills/http-skills-data-plane.ts";
import { type AwsTimeouts, createAwsClients } from "../../../shared/aws/create-aws-clients.ts";
import { awsConfig, freshBucket } from "../../support/aws.ts";
import { type PausableProxy, startPausableProxy } from "../../support/pausable-proxy.ts";
import { type SilentServer, startSilentServer } from "../../support/silent-server.ts";
import { newKeyPair } from "../../unit/capability/capability-keys.ts";

// Issue 14 (3): every call to S3, SQS and the data plane is bounded. Each peer here
// accepts the connection and then never answers (or stops mid-body): the call ends with
// an error saying what did not answer, and the connection is given up, not left open.
// The callers' own signals never abort, so only the clients' bounds can end the calls.

const SHORT: AwsTimeouts = { connectionMs: 1_000, requestMs: 1_000, socketIdleMs: 1_000 };
const credentials = awsConfig().credentials;
const forever = () => new AbortController().signal;

let peers: Array<SilentServer | PausableProxy> = [];
afterEach(async () => {
  await Promise.all(peers.map((p) => p.close()));
  peers = [];
});

async function silent(respondHead?: string): Promise<SilentServer> {
  const server = await startSilentServer(respondHead);
  peers.push(server);
  return server;
}

describe("S3 and SQS clients against a hung endpoint", () => {
  it("an attachments HEAD that is never answered: unavailable, connection given up", async () => {
    const server = await silent();
    const { s3 } = createAwsClients({ AWS_ENDPOINT_URL: server.url }, credentials, SHORT);
    const store = createS3AttachmentObjectStore({ s3, bucket: "attachments" });
    await expect(store.head("tmp/x", forever())).rejects.toMatchObject({
      code: "unavailable",
      message: expect.stringContaining("The attachments bucket cannot be reached"),
    });
    expect(server.accepted()).toBeGreaterThan(0);
    await expect.poll(() => server.open()).toBe(0);
  });

  it("an object body that stops mid-stream: the read fails unavailable instead of waiting", async () => {
    const real = awsConfig().endpoint;
    const target = new URL(real);
    const proxy = await startPausableProxy({ host: target.hostname, port: Number(target.port) });
    peers.push(proxy);
    const direct = createAwsClients({ AWS_ENDPOINT_URL: real }, credentials).s3;
    const bucket = await freshBucket(direct);
    // Larger than every socket buffer on the way, so the body cannot arrive before the pause.
    const bytes = Buffer.alloc(8 * 1024 * 1024, 7);
    await direct.send(new PutObjectCommand({ Bucket: bucket, Key: "big", Body: bytes }));

    const { s3 } = createAwsClients(
      { AWS_ENDPOINT_URL: `http://127.0.0.1:${proxy.port}` },
      credentials,
      SHORT,
    );
    const store = createS3AttachmentObjectStore({ s3, bucket });
    const body = await store.open("big", undefined, forever());
    if (typeof body === "string") throw new Error(`object is ${body}`);
    let received = 0;
    const reading = (async () => {
      for await (const chunk of body) {
        received += chunk.byteLength;
        proxy.pause();
      }
    })();
    await expect(reading).rejects.toMatchObject({ code: "unavailable" });
    expect(received).toBeGreaterThan(0);
    expect(received).toBeLessThan(bytes.length);
  });

  it("a queue receive that is never answered ends with a timeout, connection given up", async () => {
    const server = await silent();
    const { sqs } = createAwsClients({ AWS_ENDPOINT_URL: server.url }, credentials, SHORT);
    const queue = createSqsWorkQueue({ sqs, queueUrl: `${server.url}/000000000000/runs` });
    await expect(
      queue.receive({ max: 1, waitSeconds: 0, visibilityTimeoutSeconds: 30 }, forever()),
    ).rejects.toMatchObject({ name: "TimeoutError" });
    await expect.poll(() => server.open()).toBe(0);
  });

  it("the default bounds still allow a real long poll", async () => {
    const { sqs } = createAwsClients({ AWS_ENDPOINT_URL: awsConfig().endpoint }, credentials);
    const out = await sqs.send(new CreateQueueCommand({ QueueName: `poll-${Date.now()}` }));
    const queue = createSqsWorkQueue({ sqs, queueUrl: out.QueueUrl as string });
    // A 2 s wait on an empty queue answers after the wait, inside the request bound.
    expect(
      await queue.receive({ max: 1, waitSeconds: 2, visibilityTimeoutSeconds: 30 }, forever()),
    ).toEqual([]);
  });
});

describe("data-plane HTTP clients against a hung agent-host", () => {
  const minter = async () =>
    createCapabilityMinter({ privateJwk: (await newKeyPair()).privateJwk });

  it("a Workdir check that is never answered: unavailable, 'did not answer in time'", async () => {
    const server = await silent();
    const client = createHttpDataPlaneClient({
      baseUrl: server.url,
      capabilities: await minter(),
      timeoutMs: 1_000,
    });
    await expect(client.checkExistingWorkdir("alice", "work", forever())).rejects.toMatchObject({
      code: "unavailable",
      message: expect.stringContaining("did not answer in time to check the directory"),
    });
    await expect.poll(() => server.open()).toBe(0);
  });

  it("an answer whose body never comes: the same bound ends the read", async () => {
    const server = await silent(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
    );
    const client = createHttpDataPlaneClient({
      baseUrl: server.url,
      capabilities: await minter(),
      timeoutMs: 1_000,
    });
    await expect(client.checkExistingWorkdir("alice", "work", forever())).rejects.toMatchObject({
      code: "unavailable",
    });
    await expect.poll(() => server.open()).toBe(0);
  });

  it("a skills call that is never answered: unavailable", async () => {
    const server = await silent();
    const skills = createHttpSkillsDataPlane({
      baseUrl: server.url,
      capabilities: await minter(),
      timeoutMs: 1_000,
    });
    await expect(skills.listPersonalSkills("alice", forever())).rejects.toMatchObject({
      code: "unavailable",
    });
  });
});
