import type { AddressInfo } from "node:net";
import { CreateBucketCommand, GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { serve } from "@hono/node-server";
import type { FauxqsServer } from "fauxqs";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { presignUpload } from "../../../functions/attachments/presign-upload.ts";
import { presignSkillArchivePut } from "../../../functions/skills/skill-archive-uploads.ts";
import { LOCAL_S3_PROXY_PATH } from "../../../infra/local/console/console-config.ts";
import { registerS3UploadProxy } from "../../../infra/local/console/s3-upload-proxy.ts";
import {
  localAwsCredentials,
  localUploadCredentials,
  startLoopbackFauxqs,
} from "../../../infra/local/loopback-fauxqs.ts";

// Issue 32 (4), the attacker's side of the local upload path: a presigned URL grants one
// object, one method, one size (when signed) until its expiry, and nothing else; every
// refusal writes nothing. The URLs carry upload credentials the emulator itself refuses,
// so a user cannot reach it directly with them either.

const SECRET = "a-dev-secret-of-this-install-for-uploads";
const BUCKET = "attachments";
let fauxqs: FauxqsServer;
let server: ReturnType<typeof serve>;
let base: string;
let emulator: S3Client;
let presigner: S3Client;

beforeAll(async () => {
  const credentials = localAwsCredentials(SECRET);
  fauxqs = await startLoopbackFauxqs({ port: 0, logger: false }, credentials);
  emulator = new S3Client({
    endpoint: fauxqs.address,
    region: "us-east-1",
    credentials,
    forcePathStyle: true,
  });
  await emulator.send(new CreateBucketCommand({ Bucket: BUCKET }));
  const app = new Hono();
  server = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  presigner = new S3Client({
    endpoint: `${base}${LOCAL_S3_PROXY_PATH}`,
    region: "us-east-1",
    credentials: localUploadCredentials(SECRET),
    forcePathStyle: true,
  });
  registerS3UploadProxy(app, { awsEndpoint: fauxqs.address, presigner, emulator });
});
afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await fauxqs?.stop();
});

/** The object's bytes, or undefined when it does not exist. */
async function stored(key: string): Promise<string | undefined> {
  try {
    const out = await emulator.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return await out.Body?.transformToString();
  } catch (error) {
    if ((error as { name?: string }).name === "NoSuchKey") return undefined;
    throw error;
  }
}

const attachmentUrl = async (key: string, size: number, signedAt = new Date(), ttl = 300) =>
  (
    await presignUpload(presigner, {
      bucket: BUCKET,
      key,
      size,
      contentType: "text/plain",
      expiresInSeconds: ttl,
      signedAt,
    })
  ).url;

const put = (url: string, body: string, init: RequestInit = {}) =>
  fetch(url, {
    method: "PUT",
    body,
    headers: { "content-type": "text/plain" },
    signal: AbortSignal.timeout(30_000),
    ...init,
  });

const unique = (prefix: string) => `${prefix}/${crypto.randomUUID()}`;

describe("the local upload path", () => {
  test("a presigned attachment upload stores exactly its object", async () => {
    const key = unique("tmp/alice");
    const res = await put(await attachmentUrl(key, 5), "hello");
    expect(res.status).toBe(200);
    expect(await stored(key)).toBe("hello");
  });

  test("a URL used for another key is refused and writes nothing", async () => {
    const granted = unique("tmp/alice");
    const victim = unique("tmp/bob");
    const url = new URL(await attachmentUrl(granted, 4));
    url.pathname = `${LOCAL_S3_PROXY_PATH}/${BUCKET}/${victim}`;
    const res = await put(url.toString(), "evil");
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("signature does not match");
    expect(await stored(victim)).toBeUndefined();
    expect(await stored(granted)).toBeUndefined();
  });

  test("another size or content type is refused and writes nothing", async () => {
    const key = unique("tmp/alice");
    const url = await attachmentUrl(key, 4);
    expect((await put(url, "12345")).status).toBe(403);
    expect((await put(url, "123")).status).toBe(403);
    const typed = await put(url, "1234", { headers: { "content-type": "text/html" } });
    expect(typed.status).toBe(403);
    expect(await stored(key)).toBeUndefined();
  });

  test("another method is refused and writes or reads nothing", async () => {
    const key = unique("tmp/alice");
    const url = await attachmentUrl(key, 4);
    for (const method of ["POST", "DELETE", "GET"]) {
      const res = await fetch(url, {
        method,
        ...(method === "POST" ? { body: "1234" } : {}),
        signal: AbortSignal.timeout(30_000),
      });
      expect(res.status, method).toBeGreaterThanOrEqual(400);
      await res.body?.cancel();
    }
    expect(await stored(key)).toBeUndefined();
  });

  test("an expired or tampered URL is refused and writes nothing", async () => {
    const key = unique("tmp/alice");
    const expired = await attachmentUrl(key, 4, new Date(Date.now() - 3_600_000), 60);
    const late = await put(expired, "1234");
    expect(late.status).toBe(403);
    expect(await late.text()).toContain("expired");
    const longer = new URL(expired);
    longer.searchParams.set("X-Amz-Expires", "604800");
    expect((await put(longer.toString(), "1234")).status).toBe(403);
    const tampered = new URL(await attachmentUrl(key, 4));
    const sig = tampered.searchParams.get("X-Amz-Signature") ?? "";
    tampered.searchParams.set(
      "X-Amz-Signature",
      `${sig.slice(0, -1)}${sig.endsWith("0") ? "1" : "0"}`,
    );
    expect((await put(tampered.toString(), "1234")).status).toBe(403);
    expect(await stored(key)).toBeUndefined();
  });

  test("a skill archive URL stores its archive, and cannot be pointed at a user's tmp/", async () => {
    const key = unique("skill-uploads");
    const url = await presignSkillArchivePut(presigner, {
      bucket: BUCKET,
      key,
      expiresInSeconds: 300,
      signedAt: new Date(),
    });
    const headers = { "content-type": "application/octet-stream" };
    const victim = unique("tmp/bob");
    const moved = new URL(url);
    moved.pathname = `${LOCAL_S3_PROXY_PATH}/${BUCKET}/${victim}`;
    expect((await put(moved.toString(), "zip", { headers })).status).toBe(403);
    expect(await stored(victim)).toBeUndefined();
    expect((await put(url, "zip", { headers })).status).toBe(200);
    expect(await stored(key)).toBe("zip");
  });

  test("the emulator refuses a URL a user was handed, sent to it directly", async () => {
    const key = unique("tmp/alice");
    const handed = new URL(await attachmentUrl(key, 4));
    const direct = new URL(
      handed.pathname.slice(LOCAL_S3_PROXY_PATH.length) + handed.search,
      fauxqs.address,
    );
    const res = await put(direct.toString(), "1234");
    expect(res.status).toBe(403);
    expect(await stored(key)).toBeUndefined();
    // And the credentials it carries are not the emulator's.
    expect(handed.searchParams.get("X-Amz-Credential")).not.toContain(
      localAwsCredentials(SECRET).accessKeyId,
    );
  });
});
