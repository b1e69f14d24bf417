import { connect } from "node:net";
import { networkInterfaces } from "node:os";
import { CreateBucketCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { CreateQueueCommand, ListQueuesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { FauxqsServer } from "fauxqs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  LOCAL_EMULATOR_HOST,
  localAwsCredentials,
  startLoopbackFauxqs,
} from "../../../infra/local/loopback-fauxqs.ts";

// Hostile-tenant finding: the local SQS + S3 emulator listened on 0.0.0.0 and took any
// credentials. The local Workcell's emulator now binds loopback and refuses requests not
// signed with the install's own access key id.

const credentials = localAwsCredentials("a-dev-secret-of-this-install");
let fauxqs: FauxqsServer;
let port: number;

beforeAll(async () => {
  fauxqs = await startLoopbackFauxqs({ port: 0, logger: false }, credentials);
  port = fauxqs.port;
});
afterAll(async () => {
  await fauxqs?.stop();
});

const endpoint = () => `http://${LOCAL_EMULATOR_HOST}:${port}`;
const sqs = (c = credentials) =>
  new SQSClient({ endpoint: endpoint(), region: "us-east-1", credentials: c });
const s3 = (c = credentials) =>
  new S3Client({ endpoint: endpoint(), region: "us-east-1", credentials: c, forcePathStyle: true });

function canConnect(host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 5_000 });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

describe("the local emulator", () => {
  test("listens on loopback only: another address of this machine is refused", async () => {
    expect(fauxqs.address).toContain(LOCAL_EMULATOR_HOST);
    expect(await canConnect("127.0.0.1")).toBe(true);
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a !== undefined && a.family === "IPv4" && !a.internal);
    if (external === undefined) {
      throw new Error("this test needs a non-loopback IPv4 address on the machine (none found)");
    }
    expect(await canConnect(external.address)).toBe(false);
  });

  test("refuses other credentials and unsigned requests, with nothing created", async () => {
    const name = `probe-${Date.now()}`;
    const wrong = { accessKeyId: "local", secretAccessKey: "local" };
    await expect(
      sqs(wrong).send(new CreateQueueCommand({ QueueName: name })),
    ).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    await expect(s3(wrong).send(new CreateBucketCommand({ Bucket: name }))).rejects.toMatchObject({
      $metadata: { httpStatusCode: 403 },
    });
    const unsigned = await fetch(`${endpoint()}/`, {
      method: "POST",
      headers: {
        "content-type": "application/x-amz-json-1.0",
        "x-amz-target": "AmazonSQS.ListQueues",
      },
      body: "{}",
    });
    expect(unsigned.status).toBe(403);
    const listed = await sqs().send(new ListQueuesCommand({}));
    expect(listed.QueueUrls ?? []).not.toContainEqual(expect.stringContaining(name));
  });

  test("the install's own credentials work, header-signed and presigned", async () => {
    const { QueueUrl } = await sqs().send(new CreateQueueCommand({ QueueName: "mine" }));
    expect(QueueUrl).toBeTruthy();
    await s3().send(new CreateBucketCommand({ Bucket: "mine" }));
    const url = await getSignedUrl(s3(), new PutObjectCommand({ Bucket: "mine", Key: "k" }), {
      expiresIn: 60,
    });
    expect((await fetch(url, { method: "PUT", body: "bytes" })).status).toBe(200);
    const forged = url.replace(credentials.accessKeyId, "local");
    expect((await fetch(forged, { method: "PUT", body: "other" })).status).toBe(403);
  });
});
