import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HeadObjectCommand } from "@aws-sdk/client-s3";
import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Attachment } from "../../../shared/contracts/attachment.ts";
import { attachments, tmpUploads } from "../../../shared/db/schema.ts";
import {
  ALICE,
  type AttachmentsHarness,
  BOB,
  filesBelow,
  startAttachmentsHarness,
  type ThreadJson,
  type UploadItem,
} from "./support/attachments-harness.ts";

let h: AttachmentsHarness;

beforeAll(async () => {
  h = await startAttachmentsHarness();
});
afterAll(async () => {
  await h?.close();
});

type ErrorJson = { error: { code: string; message: string; details?: Record<string, unknown> } };

function first<T>(items: readonly T[], index = 0): T {
  const item = items[index];
  if (item === undefined) throw new Error(`no item ${index}`);
  return item;
}

/** Uploads each file through its presigned URL; returns the group and its items. */
async function uploaded(
  files: { name: string; bytes: Uint8Array | string; content_type?: string; announce?: number }[],
  uid = ALICE,
) {
  const group = await h.requestUploads(
    files.map((f) => ({
      name: f.name,
      size: f.announce ?? Buffer.byteLength(f.bytes),
      content_type: f.content_type ?? "application/octet-stream",
    })),
    uid,
  );
  for (const [index, file] of files.entries()) await h.put(first(group.items, index), file.bytes);
  return group;
}

async function rowsOf(thread: ThreadJson) {
  return h.db.select().from(attachments).where(eq(attachments.threadId, thread.thread_id));
}

describe("confirm", () => {
  test("browser PUT through the presigned URL, confirm, read back through the data plane: same bytes", async () => {
    const thread = await h.createThread();
    const bytes = randomBytes(300_000);
    const group = await uploaded([{ name: "data.bin", bytes }]);
    const item = first(group.items);
    const response = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: [{ file_id: item.file_id }],
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { items: Attachment[] };
    expect(body.items).toHaveLength(1);
    const attachment = first(body.items);
    expect(Object.keys(attachment).sort()).toEqual(
      [
        "content_type",
        "file_id",
        "file_name",
        "original_path",
        "path",
        "size",
        "status",
        "uploaded_at",
      ].sort(),
    );
    expect(attachment).toMatchObject({
      file_id: item.file_id,
      file_name: "data.bin",
      content_type: "application/octet-stream",
      size: bytes.length,
      status: "uploaded",
      path: "uploads/data.bin",
      original_path: "uploads/data.bin",
    });
    expect((await h.readBack(thread.thread_id, "uploads/data.bin")).equals(bytes)).toBe(true);

    const list = await h.call("GET", `/v1/threads/${thread.thread_id}/attachments`);
    expect(list.status).toBe(200);
    expect(((await list.json()) as { items: Attachment[] }).items).toEqual(body.items);
    // The tmp upload is consumed (row and object), so the group cannot be confirmed twice.
    expect(
      await h.db.select().from(tmpUploads).where(eq(tmpUploads.groupId, group.group_id)),
    ).toEqual([]);
    const gone = await h.s3
      .send(
        new HeadObjectCommand({
          Bucket: h.bucket,
          Key: `tmp/${ALICE}/${group.group_id}/${item.file_id}`,
        }),
      )
      .then(
        () => false,
        () => true,
      );
    expect(gone).toBe(true);
    const again = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: [{ file_id: item.file_id }],
    });
    expect(again.status).toBe(404);
  });

  test("one good and one never-uploaded item: 400, no file in uploads/, no rows", async () => {
    const thread = await h.createThread();
    const group = await h.requestUploads([
      { name: "good.txt", size: 4, content_type: "text/plain" },
      { name: "missing.txt", size: 4, content_type: "text/plain" },
    ]);
    await h.put(first(group.items, 0), "good");
    const response = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: group.items.map((i) => ({ file_id: i.file_id })),
    });
    expect(response.status).toBe(400);
    const error = (await response.json()) as ErrorJson;
    expect(error.error.details).toMatchObject({
      reason: "attachment_not_uploaded",
      file_id: first(group.items, 1).file_id,
    });
    expect(h.uploadsOnDisk(thread)).toEqual([]);
    expect(await rowsOf(thread)).toEqual([]);
    // Nothing consumed: after uploading the missing file, the same group confirms.
    await h.put(first(group.items, 1), "late");
    const retry = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: group.items.map((i) => ({ file_id: i.file_id })),
    });
    expect(retry.status).toBe(200);
    expect(h.uploadsOnDisk(thread)).toEqual(["good.txt", "missing.txt"]);
  });

  test("a size that differs from the announced one: 400 and nothing written", async () => {
    const thread = await h.createThread();
    // The emulator does not check signatures, so a PUT of another size gets through to S3.
    const group = await uploaded([
      { name: "ok.txt", bytes: "fine" },
      { name: "liar.txt", bytes: "twelve bytes", announce: 5 },
    ]);
    const response = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: group.items.map((i) => ({ file_id: i.file_id })),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as ErrorJson).error.details).toMatchObject({
      reason: "attachment_not_uploaded",
      problem: "size_mismatch",
    });
    expect(h.uploadsOnDisk(thread)).toEqual([]);
    expect(await rowsOf(thread)).toEqual([]);
  });

  test("a '../../etc/passwd' name lands as uploads/passwd and nowhere else", async () => {
    const thread = await h.createThread();
    const hostPasswd = readFileSync("/etc/passwd");
    const group = await uploaded([{ name: "../../etc/passwd", bytes: "not the real one" }]);
    const response = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: [{ file_id: first(group.items).file_id }],
    });
    expect(response.status).toBe(200);
    expect(first(((await response.json()) as { items: Attachment[] }).items).original_path).toBe(
      "uploads/passwd",
    );
    expect(h.uploadsOnDisk(thread)).toEqual(["passwd"]);
    expect(filesBelow(h.workdirOnDisk(thread))).toEqual(["uploads/passwd"]);
    expect(readFileSync("/etc/passwd").equals(hostPasswd)).toBe(true);
    expect(existsSync(join(h.workdirOnDisk(thread), "..", "etc"))).toBe(false);
  });

  test("a name taken in uploads/ gets a unique suffix and the existing file is untouched", async () => {
    const thread = await h.createThread();
    const uploadsDir = join(h.workdirOnDisk(thread), "uploads");
    mkdirSync(uploadsDir, { recursive: true });
    writeFileSync(join(uploadsDir, "report.pdf"), "the user's own report");
    writeFileSync(join(uploadsDir, "report (1).pdf"), "and its first copy");
    const group = await uploaded([
      { name: "report.pdf", bytes: "%PDF new one", content_type: "application/pdf" },
    ]);
    const response = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: [{ file_id: first(group.items).file_id }],
    });
    expect(response.status).toBe(200);
    const attachment = first(((await response.json()) as { items: Attachment[] }).items);
    expect(attachment).toMatchObject({
      file_name: "report (2).pdf",
      original_path: "uploads/report (2).pdf",
    });
    expect(readFileSync(join(uploadsDir, "report.pdf"), "utf8")).toBe("the user's own report");
    expect(readFileSync(join(uploadsDir, "report (1).pdf"), "utf8")).toBe("and its first copy");
    expect(readFileSync(join(uploadsDir, "report (2).pdf"), "utf8")).toBe("%PDF new one");
  });

  test("two files with the same name in one batch get distinct paths", async () => {
    const thread = await h.createThread();
    const group = await uploaded([
      { name: "notes.txt", bytes: "first" },
      { name: "notes.txt", bytes: "second" },
    ]);
    const response = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: group.items.map((i) => ({ file_id: i.file_id })),
    });
    expect(response.status).toBe(200);
    const items = ((await response.json()) as { items: Attachment[] }).items;
    expect(items.map((i) => i.path)).toEqual(["uploads/notes.txt", "uploads/notes (1).txt"]);
    expect((await h.readBack(thread.thread_id, "uploads/notes.txt")).toString()).toBe("first");
    expect((await h.readBack(thread.thread_id, "uploads/notes (1).txt")).toString()).toBe("second");
  });

  test("another uid's group or thread: 404, nothing written, nothing consumed", async () => {
    const aliceThread = await h.createThread(ALICE);
    const bobThread = await h.createThread(BOB);
    const bobGroup = await uploaded([{ name: "bob.txt", bytes: "bob's" }], BOB);
    const aliceGroup = await uploaded([{ name: "alice.txt", bytes: "alice's" }], ALICE);

    // Alice names Bob's group in her own thread.
    const theirGroup = await h.confirm(aliceThread.thread_id, {
      group_id: bobGroup.group_id,
      items: [{ file_id: first(bobGroup.items).file_id }],
    });
    expect(theirGroup.status).toBe(404);
    // Alice confirms her group into Bob's thread.
    const theirThread = await h.confirm(bobThread.thread_id, {
      group_id: aliceGroup.group_id,
      items: [{ file_id: first(aliceGroup.items).file_id }],
    });
    expect(theirThread.status).toBe(404);
    // Her own group, but a file of Bob's group listed in it.
    const mixed = await h.confirm(aliceThread.thread_id, {
      group_id: aliceGroup.group_id,
      items: [
        { file_id: first(aliceGroup.items).file_id },
        { file_id: first(bobGroup.items).file_id },
      ],
    });
    expect(mixed.status).toBe(404);

    expect(h.uploadsOnDisk(aliceThread, ALICE)).toEqual([]);
    expect(h.uploadsOnDisk(bobThread, BOB)).toEqual([]);
    expect(await rowsOf(aliceThread)).toEqual([]);
    expect(await rowsOf(bobThread)).toEqual([]);
    for (const group of [aliceGroup, bobGroup]) {
      const rows = await h.db
        .select()
        .from(tmpUploads)
        .where(eq(tmpUploads.groupId, group.group_id));
      expect(rows).toHaveLength(1);
    }
  });

  test("the data plane imports only the capability's own user's tmp uploads (403 otherwise)", async () => {
    const bobGroup = await uploaded([{ name: "secret.txt", bytes: "bob's secret" }], BOB);
    const bobItem: UploadItem = first(bobGroup.items);
    const aliceThread = await h.createThread(ALICE);
    const importAs = async (ops: ("read" | "import")[], objectKey: string) => {
      const { token } = await h.capabilities.mint(
        { uid: ALICE, workdirPath: aliceThread.workdir_path, ops },
        AbortSignal.timeout(5_000),
      );
      return fetch(`${h.dataPlaneUrl}/internal/v1/attachments/import`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({
          workdir_path: aliceThread.workdir_path,
          items: [
            {
              file_id: bobItem.file_id,
              object_key: objectKey,
              name: "stolen.txt",
              size: 12,
              content_type: "text/plain",
              parse: false,
            },
          ],
        }),
      });
    };
    const bobKey = `tmp/${BOB}/${bobGroup.group_id}/${bobItem.file_id}`;
    // A browser-facing capability never carries `import`.
    const read = await importAs(["read"], bobKey);
    expect(read.status).toBe(403);
    expect(((await read.json()) as ErrorJson).error.details).toMatchObject({
      reason: "operation_not_granted",
    });
    // An import capability of Alice's cannot name Bob's object, directly or with `..`.
    for (const key of [bobKey, `tmp/${ALICE}/../${BOB}/${bobGroup.group_id}/${bobItem.file_id}`]) {
      const response = await importAs(["import"], key);
      expect(response.status, key).toBe(403);
      expect(((await response.json()) as ErrorJson).error.details).toMatchObject({
        reason: "capability_scope",
      });
    }
    expect(h.uploadsOnDisk(aliceThread)).toEqual([]);
  });

  test("Idempotency-Key: the same confirm replays its answer without importing again", async () => {
    const thread = await h.createThread();
    const group = await uploaded([{ name: "once.txt", bytes: "once" }]);
    const body = { group_id: group.group_id, items: [{ file_id: first(group.items).file_id }] };
    const headers = { "idempotency-key": `confirm-${group.group_id}` };
    const one = await h.call("POST", `/v1/threads/${thread.thread_id}/attachments/confirm`, {
      body,
      headers,
    });
    const two = await h.call("POST", `/v1/threads/${thread.thread_id}/attachments/confirm`, {
      body,
      headers,
    });
    expect(one.status).toBe(200);
    expect(two.status).toBe(200);
    expect(await two.json()).toEqual(await one.json());
    expect(h.uploadsOnDisk(thread)).toEqual(["once.txt"]);
    expect(await rowsOf(thread)).toHaveLength(1);
  });

  test("a symlinked uploads/ is refused (403) and nothing lands through it", async () => {
    const thread = await h.createThread();
    const workdir = h.workdirOnDisk(thread);
    const elsewhere = join(h.dataRoot, "elsewhere");
    mkdirSync(workdir, { recursive: true });
    mkdirSync(elsewhere, { recursive: true });
    symlinkSync(elsewhere, join(workdir, "uploads"));
    const group = await uploaded([{ name: "x.txt", bytes: "x" }]);
    const response = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: [{ file_id: first(group.items).file_id }],
    });
    expect(response.status).toBe(403);
    expect(filesBelow(elsewhere)).toEqual([]);
    expect(await rowsOf(thread)).toEqual([]);
  });
});
