import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, expect, test } from "vitest";
import { attachments, tmpUploads } from "../../../shared/db/schema.ts";
import {
  type AttachmentsHarness,
  BOB,
  startAttachmentsHarness,
  type ThreadJson,
} from "./support/attachments-harness.ts";

// Issue 13 item 1 / decision 0017: an attachment confirm writes into the UserWorkspace, so
// it is held to the uid's quota: checked on the announced sizes before anything streams
// from S3, each object cut off at its announced size while streaming. Over the quota:
// 507 quota_exceeded, nothing in uploads/, no rows, the upload kept for a retry, the
// bytes already there intact, another uid unaffected; a raised limit lets it through.

type ErrorJson = { error: { code: string; details?: Record<string, unknown> } };
const QUINN = "quinn";
let h: AttachmentsHarness;
let admin: Record<string, string>;

beforeAll(async () => {
  h = await startAttachmentsHarness({ quota: true });
  admin = { authorization: `Bearer ${await h.adminToken("root")}` };
});
afterAll(async () => {
  await h?.close();
});

async function setBytesLimit(uid: string, bytes: number): Promise<void> {
  const response = await h.call("PUT", `/v1/admin/users/${uid}/limits`, {
    headers: admin,
    body: { workspace_bytes: bytes },
  });
  expect(response.status).toBe(200);
}

async function uploadedGroup(uid: string, name: string, bytes: string, announce?: number) {
  const group = await h.requestUploads(
    [{ name, size: announce ?? Buffer.byteLength(bytes), content_type: "text/plain" }],
    uid,
  );
  const item = group.items[0];
  if (item === undefined) throw new Error("no upload item");
  await h.put(item, bytes);
  return { group_id: group.group_id, items: [{ file_id: item.file_id }] };
}

async function rowsOf(thread: ThreadJson) {
  return h.db.select().from(attachments).where(eq(attachments.threadId, thread.thread_id));
}

test("a confirm over the quota is 507, writes nothing and keeps what is there; raising the limit lets it in", async () => {
  await setBytesLimit(QUINN, 1000);
  const thread = await h.createThread(QUINN);
  const fits = await h.confirm(
    thread.thread_id,
    await uploadedGroup(QUINN, "first.txt", "a".repeat(600)),
    QUINN,
  );
  expect(fits.status).toBe(200);

  const second = await uploadedGroup(QUINN, "second.txt", "b".repeat(600));
  const over = await h.confirm(thread.thread_id, second, QUINN);
  expect(over.status).toBe(507);
  expect(((await over.json()) as ErrorJson).error.code).toBe("quota_exceeded");
  expect(h.uploadsOnDisk(thread, QUINN)).toEqual(["first.txt"]);
  expect(readFileSync(join(h.workdirOnDisk(thread, QUINN), "uploads", "first.txt"), "utf8")).toBe(
    "a".repeat(600),
  );
  expect((await rowsOf(thread)).map((r) => r.fileName)).toEqual(["first.txt"]);
  // Nothing consumed: the upload is still there to confirm later.
  expect(
    await h.db.select().from(tmpUploads).where(eq(tmpUploads.groupId, second.group_id)),
  ).toHaveLength(1);

  // Another uid is not held to Quinn's quota.
  const bobThread = await h.createThread(BOB);
  const bobs = await h.confirm(
    bobThread.thread_id,
    await uploadedGroup(BOB, "bob.txt", "c".repeat(600)),
    BOB,
  );
  expect(bobs.status).toBe(200);

  await setBytesLimit(QUINN, 5000);
  const retried = await h.confirm(thread.thread_id, second, QUINN);
  expect(retried.status).toBe(200);
  expect(h.uploadsOnDisk(thread, QUINN)).toEqual(["first.txt", "second.txt"]);
});

test("an object larger than announced cannot slip past the quota while streaming", async () => {
  const uid = "rhea";
  await setBytesLimit(uid, 1000);
  const thread = await h.createThread(uid);
  // Announced 100 bytes (fits), uploaded 5,000 (the emulator does not check the signed size).
  const liar = await uploadedGroup(uid, "liar.txt", "d".repeat(5000), 100);
  const response = await h.confirm(thread.thread_id, liar, uid);
  expect(response.status).toBe(400);
  expect(((await response.json()) as ErrorJson).error.details).toMatchObject({
    problem: "size_mismatch",
  });
  expect(h.uploadsOnDisk(thread, uid)).toEqual([]);
  expect(await rowsOf(thread)).toEqual([]);
  // The quota's room is whole: a file of 900 bytes still fits.
  const honest = await h.confirm(
    thread.thread_id,
    await uploadedGroup(uid, "honest.txt", "e".repeat(900)),
    uid,
  );
  expect(honest.status).toBe(200);
});
