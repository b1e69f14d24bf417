import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { join } from "node:path";
import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Attachment } from "../../../shared/contracts/attachment.ts";
import {
  ALICE,
  type AttachmentsHarness,
  startAttachmentsHarness,
  type ThreadJson,
} from "./support/attachments-harness.ts";
import { peakRssBytes, resetPeakRss } from "./support/peak-rss.ts";

// A 200 MiB object is confirmed with flat memory: the data plane runs in its own process
// (support/data-plane-child.ts) so its peak resident memory (VmHWM, reset before the
// import) can be read; holding the object would grow it by at least the object's size.
// As streaming.test.ts of the data plane measured, V8 frees streamed Buffers only when a
// GC runs, after tens of MiB of external memory: the bound is half the object, far below
// what buffering would take, far above that slack. Tests never assert on time.

const OBJECT_BYTES = 200 * 1024 * 1024;
const MAX_PEAK_GROWTH_BYTES = OBJECT_BYTES / 2;

let h: AttachmentsHarness;

beforeAll(async () => {
  h = await startAttachmentsHarness({ dataPlane: "child" });
});
afterAll(async () => {
  await h?.close();
});

/** Deterministic, incompressible-looking bytes (a hash chain), so nothing dedupes them. */
function patterned(bytes: number): Buffer {
  const out = Buffer.allocUnsafe(bytes);
  let block = createHash("sha256").update("seed").digest();
  for (let offset = 0; offset < bytes; offset += block.length) {
    block.copy(out, offset);
    block = createHash("sha256").update(block).digest();
  }
  return out;
}

async function attachOne(thread: ThreadJson, name: string, bytes: Buffer): Promise<Attachment> {
  const group = await h.requestUploads([
    { name, size: bytes.length, content_type: "application/octet-stream" },
  ]);
  const item = group.items[0];
  if (item === undefined) throw new Error("no item");
  await h.put(item, bytes);
  const response = await h.confirm(thread.thread_id, {
    group_id: group.group_id,
    items: [{ file_id: item.file_id }],
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { items: Attachment[] }).items[0] as Attachment;
}

/** Parts of this size (the emulator's request limit is 11 MiB; S3's minimum part 5 MiB). */
const PART_BYTES = 8 * 1024 * 1024;

async function putMultipart(key: string, bytes: Buffer): Promise<void> {
  const { UploadId } = await h.s3.send(
    new CreateMultipartUploadCommand({ Bucket: h.bucket, Key: key }),
  );
  const parts: { ETag: string | undefined; PartNumber: number }[] = [];
  for (let offset = 0, part = 1; offset < bytes.length; offset += PART_BYTES, part++) {
    const out = await h.s3.send(
      new UploadPartCommand({
        Bucket: h.bucket,
        Key: key,
        UploadId,
        PartNumber: part,
        Body: bytes.subarray(offset, offset + PART_BYTES),
      }),
    );
    parts.push({ ETag: out.ETag, PartNumber: part });
  }
  await h.s3.send(
    new CompleteMultipartUploadCommand({
      Bucket: h.bucket,
      Key: key,
      UploadId,
      MultipartUpload: { Parts: parts },
    }),
  );
}

async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

describe("a large object", () => {
  test(`${OBJECT_BYTES / 1024 / 1024} MiB confirms with flat data-plane memory, bytes intact`, async () => {
    const pid = h.dataPlaneChild?.pid;
    if (pid === undefined) throw new Error("the data plane is not a child process");
    const thread = await h.createThread();
    // Warm-up: JIT, S3 client, sockets, the Workdir, so the measurement sees the import only.
    await attachOne(thread, "warm.bin", patterned(4 * 1024 * 1024));

    const big = patterned(OBJECT_BYTES);
    const expected = createHash("sha256").update(big).digest("hex");
    const group = await h.requestUploads([
      { name: "big.bin", size: big.length, content_type: "application/octet-stream" },
    ]);
    const item = group.items[0];
    if (item === undefined) throw new Error("no item");
    // The emulator takes at most 11 MiB per PUT (S3 itself takes 5 GiB in one presigned
    // PUT), so the test stores the object at the same key in multipart parts.
    await putMultipart(`tmp/${ALICE}/${group.group_id}/${item.file_id}`, big);

    resetPeakRss(pid);
    const baseline = peakRssBytes(pid);
    const response = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: [{ file_id: item.file_id }],
    });
    expect(response.status).toBe(200);
    const growth = peakRssBytes(pid) - baseline;
    console.info(
      `data plane peak RSS growth while importing ${OBJECT_BYTES >> 20} MiB: ${growth >> 20} MiB`,
    );
    expect(growth).toBeLessThan(MAX_PEAK_GROWTH_BYTES);

    const onDisk = join(h.workdirOnDisk(thread), "uploads", "big.bin");
    expect(await sha256OfFile(onDisk)).toBe(expected);
  }, 300_000);
});
