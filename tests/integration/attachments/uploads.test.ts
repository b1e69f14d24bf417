import { createHash, createHmac } from "node:crypto";
import { HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { SignatureV4 } from "@smithy/signature-v4";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { DEFAULT_ATTACHMENT_LIMITS } from "../../../functions/attachments/attachment-limits.ts";
import { tmpUploads } from "../../../shared/db/schema.ts";
import { awsConfig } from "../../support/aws.ts";
import {
  ALICE,
  type AttachmentsHarness,
  BOB,
  startAttachmentsHarness,
} from "./support/attachments-harness.ts";

let h: AttachmentsHarness;

beforeAll(async () => {
  h = await startAttachmentsHarness();
});
afterAll(async () => {
  await h?.close();
});

/** SigV4's hash and HMAC for the SDK's signer, from node:crypto. */
class NodeSha256 {
  readonly #hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.#hash =
      secret === undefined ? createHash("sha256") : createHmac("sha256", bytesOf(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.#hash.update(bytesOf(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.#hash.digest());
  }
  reset(): void {}
}

function bytesOf(data: string | ArrayBuffer | ArrayBufferView): string | Uint8Array {
  if (typeof data === "string") return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** What AWS's own signer computes for this PUT with the test credentials. */
async function sdkSignature(url: URL, contentType: string, contentLength: number): Promise<string> {
  const signer = new SignatureV4({
    credentials: awsConfig().credentials,
    region: awsConfig().region,
    service: "s3",
    sha256: NodeSha256,
    uriEscapePath: false,
    applyChecksum: false,
  });
  const signed = new Set(["X-Amz-Signature", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date"]);
  for (const name of ["X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Content-Sha256"])
    signed.add(name);
  const query: Record<string, string> = {};
  for (const [name, value] of url.searchParams) if (!signed.has(name)) query[name] = value;
  const date = url.searchParams.get("X-Amz-Date") ?? "";
  const signingDate = new Date(
    `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
  );
  const presigned = await signer.presign(
    {
      method: "PUT",
      protocol: url.protocol,
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query,
      headers: {
        host: url.host,
        "content-type": contentType,
        "content-length": String(contentLength),
        "X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD",
      },
    },
    {
      signingDate,
      expiresIn: Number(url.searchParams.get("X-Amz-Expires")),
      signableHeaders: new Set(["content-type", "content-length"]),
    },
  );
  return String(presigned.query?.["X-Amz-Signature"]);
}

describe("POST /v1/attachments/uploads", () => {
  test("presigned PUT: short expiry, size and type bound by the signature (checked with the SDK's signer)", async () => {
    const before = Date.now();
    const body = await h.requestUploads([
      { name: "report.pdf", size: 1234, content_type: "application/pdf" },
    ]);
    expect(body.items).toHaveLength(1);
    const item = body.items[0];
    if (item === undefined) throw new Error("no item");
    expect(item).toMatchObject({
      name: "report.pdf",
      method: "PUT",
      headers: { "Content-Type": "application/pdf" },
    });
    const url = new URL(item.upload_url);
    expect(url.pathname).toBe(`/${h.bucket}/tmp/${ALICE}/${body.group_id}/${item.file_id}`);
    const ttl = DEFAULT_ATTACHMENT_LIMITS.uploadUrlTtlSeconds;
    expect(url.searchParams.get("X-Amz-Expires")).toBe(String(ttl));
    expect(ttl).toBeLessThanOrEqual(15 * 60);
    expect(url.searchParams.get("X-Amz-SignedHeaders")).toBe("content-length;content-type;host");
    // No checksum of an empty body signed in (S3 would refuse every real upload).
    expect(
      [...url.searchParams.keys()].filter((k) => k.toLowerCase().includes("checksum")),
    ).toEqual([]);
    const expiresAt = Date.parse(item.expires_at);
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + ttl * 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + ttl * 1000);

    const signature = url.searchParams.get("X-Amz-Signature");
    expect(await sdkSignature(url, "application/pdf", 1234)).toBe(signature);
    // Another size or type gives another signature: S3 refuses the PUT.
    expect(await sdkSignature(url, "application/pdf", 1235)).not.toBe(signature);
    expect(await sdkSignature(url, "text/html", 1234)).not.toBe(signature);
  });

  test("records one tmp upload per file with the sanitized name; the PUT lands in S3", async () => {
    const body = await h.requestUploads([
      { name: "../../etc/passwd", size: 5, content_type: "text/plain" },
      { name: "C:\\Users\\me\\notes.txt", size: 5, content_type: "text/plain" },
      { name: " .hidden\u202Etxt.exe. ", size: 5, content_type: "text/plain" },
      { name: "..", size: 5, content_type: "text/plain" },
    ]);
    expect(body.items.map((i) => i.name)).toEqual([
      "passwd",
      "notes.txt",
      "hidden_txt.exe",
      "attachment",
    ]);
    const rows = await h.db.select().from(tmpUploads).where(eq(tmpUploads.groupId, body.group_id));
    expect(rows.map((r) => r.name).sort()).toEqual([
      "attachment",
      "hidden_txt.exe",
      "notes.txt",
      "passwd",
    ]);
    const first = body.items[0];
    if (first === undefined) throw new Error("no item");
    await h.put(first, "hello");
    const head = await h.s3.send(
      new HeadObjectCommand({
        Bucket: h.bucket,
        Key: `tmp/${ALICE}/${body.group_id}/${first.file_id}`,
      }),
    );
    expect(head.ContentLength).toBe(5);
  });

  test("413 over the per-file and the per-group limit; 400 for a malformed content type; nothing recorded", async () => {
    const count = async () => (await h.db.select().from(tmpUploads)).length;
    const before = await count();
    const tooBig = await h.call("POST", "/v1/attachments/uploads", {
      body: {
        files: [
          {
            name: "a.bin",
            size: DEFAULT_ATTACHMENT_LIMITS.maxFileBytes + 1,
            content_type: "application/octet-stream",
          },
        ],
      },
    });
    expect(tooBig.status).toBe(413);
    const half = Math.floor(DEFAULT_ATTACHMENT_LIMITS.maxGroupBytes / 2) + 1;
    const group = await h.call("POST", "/v1/attachments/uploads", {
      body: {
        files: [
          { name: "a.bin", size: half, content_type: "application/octet-stream" },
          { name: "b.bin", size: half, content_type: "application/octet-stream" },
        ],
      },
    });
    expect(group.status).toBe(413);
    const badType = await h.call("POST", "/v1/attachments/uploads", {
      body: { files: [{ name: "a.txt", size: 1, content_type: "text/plain\r\nX-Evil: 1" }] },
    });
    expect(badType.status).toBe(400);
    expect(await count()).toBe(before);
  });

  test("deletes this uid's groups older than 24 h (objects and rows), nobody else's, nothing recent", async () => {
    const aliceOld = await h.requestUploads(
      [{ name: "old.txt", size: 3, content_type: "text/plain" }],
      ALICE,
    );
    const bobOld = await h.requestUploads(
      [{ name: "old.txt", size: 3, content_type: "text/plain" }],
      BOB,
    );
    const aliceRecent = await h.requestUploads(
      [{ name: "new.txt", size: 3, content_type: "text/plain" }],
      ALICE,
    );
    const keyOf = (uid: string, group: { group_id: string; items: { file_id: string }[] }) =>
      `tmp/${uid}/${group.group_id}/${group.items[0]?.file_id}`;
    for (const [uid, group] of [
      [ALICE, aliceOld],
      [BOB, bobOld],
      [ALICE, aliceRecent],
    ] as const) {
      await h.s3.send(
        new PutObjectCommand({ Bucket: h.bucket, Key: keyOf(uid, group), Body: "old" }),
      );
    }
    // Age the two "old" groups past the retention.
    for (const group of [aliceOld, bobOld]) {
      await h.db
        .update(tmpUploads)
        .set({ createdAt: sql`now() - interval '25 hours'` })
        .where(eq(tmpUploads.groupId, group.group_id));
    }

    await h.requestUploads([{ name: "trigger.txt", size: 1, content_type: "text/plain" }], ALICE);

    const rowsOf = async (groupId: string) =>
      (await h.db.select().from(tmpUploads).where(eq(tmpUploads.groupId, groupId))).length;
    const exists = async (key: string) =>
      h.s3.send(new HeadObjectCommand({ Bucket: h.bucket, Key: key })).then(
        () => true,
        () => false,
      );
    expect(await rowsOf(aliceOld.group_id)).toBe(0);
    expect(await exists(keyOf(ALICE, aliceOld))).toBe(false);
    expect(await rowsOf(bobOld.group_id)).toBe(1);
    expect(await exists(keyOf(BOB, bobOld))).toBe(true);
    expect(await rowsOf(aliceRecent.group_id)).toBe(1);
    expect(await exists(keyOf(ALICE, aliceRecent))).toBe(true);
  });

  test("401 without a token", async () => {
    const response = await h.call("POST", "/v1/attachments/uploads", {
      uid: null,
      body: { files: [{ name: "a.txt", size: 1, content_type: "text/plain" }] },
    });
    expect(response.status).toBe(401);
  });
});
