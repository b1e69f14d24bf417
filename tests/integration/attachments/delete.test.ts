import { existsSync } from "node:fs";
import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Attachment } from "../../../shared/contracts/attachment.ts";
import { agentRuns, attachments } from "../../../shared/db/schema.ts";
import {
  ALICE,
  type AttachmentsHarness,
  BOB,
  startAttachmentsHarness,
  type ThreadJson,
} from "./support/attachments-harness.ts";

let h: AttachmentsHarness;

beforeAll(async () => {
  h = await startAttachmentsHarness();
});
afterAll(async () => {
  await h?.close();
});

type ErrorJson = { error: { code: string; details?: Record<string, unknown> } };

async function attach(
  thread: ThreadJson,
  name: string,
  text: string,
  parse = false,
): Promise<Attachment> {
  const group = await h.requestUploads([
    { name, size: Buffer.byteLength(text), content_type: "text/plain" },
  ]);
  const item = group.items[0];
  if (item === undefined) throw new Error("no item");
  await h.put(item, text);
  const response = await h.confirm(thread.thread_id, {
    group_id: group.group_id,
    items: [{ file_id: item.file_id, parse }],
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { items: Attachment[] }).items[0] as Attachment;
}

async function submitRun(thread: ThreadJson, input: string): Promise<string> {
  const response = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
    body: { input },
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { run_id: string }).run_id;
}

async function finishRun(runId: string): Promise<void> {
  await h.db
    .update(agentRuns)
    .set({ status: "cancelled", finishedAt: sql`now()` })
    .where(eq(agentRuns.runId, runId));
}

const onDisk = (thread: ThreadJson, path: string) =>
  existsSync(join(h.workdirOnDisk(thread), path));

describe("DELETE /v1/threads/{thread_id}/attachments/{file_id}", () => {
  test("409 while a pending run references it, bytes kept; 204 once it finished, row then files gone", async () => {
    const thread = await h.createThread();
    const attachment = await attach(thread, "brief.txt", "read me", true);
    const runId = await submitRun(thread, "Summarize the brief");

    const refused = await h.call(
      "DELETE",
      `/v1/threads/${thread.thread_id}/attachments/${attachment.file_id}`,
    );
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as ErrorJson).error.details).toMatchObject({
      reason: "attachment_in_use",
      run_id: runId,
    });
    expect((await h.readBack(thread.thread_id, attachment.original_path)).toString()).toBe(
      "read me",
    );
    expect(onDisk(thread, attachment.path)).toBe(true);
    expect(
      await h.db.select().from(attachments).where(eq(attachments.fileId, attachment.file_id)),
    ).toHaveLength(1);

    await finishRun(runId);
    const deleted = await h.call(
      "DELETE",
      `/v1/threads/${thread.thread_id}/attachments/${attachment.file_id}`,
    );
    expect(deleted.status).toBe(204);
    expect(
      await h.db.select().from(attachments).where(eq(attachments.fileId, attachment.file_id)),
    ).toEqual([]);
    expect(onDisk(thread, attachment.original_path)).toBe(false);
    expect(onDisk(thread, attachment.path)).toBe(false);
    const list = await h.call("GET", `/v1/threads/${thread.thread_id}/attachments`);
    expect(((await list.json()) as { items: unknown[] }).items).toEqual([]);
  });

  test("a pending run created before the upload does not reference it", async () => {
    const thread = await h.createThread();
    const runId = await submitRun(thread, "earlier request");
    const attachment = await attach(thread, "later.txt", "later");
    const deleted = await h.call(
      "DELETE",
      `/v1/threads/${thread.thread_id}/attachments/${attachment.file_id}`,
    );
    expect(deleted.status).toBe(204);
    expect(onDisk(thread, attachment.original_path)).toBe(false);
    await finishRun(runId);
  });

  test("another uid's attachment, an unknown id, a malformed id: 404 and nothing removed", async () => {
    const thread = await h.createThread(ALICE);
    const attachment = await attach(thread, "mine.txt", "mine");
    const asBob = await h.call(
      "DELETE",
      `/v1/threads/${thread.thread_id}/attachments/${attachment.file_id}`,
      { uid: BOB },
    );
    expect(asBob.status).toBe(404);
    const unknown = await h.call(
      "DELETE",
      `/v1/threads/${thread.thread_id}/attachments/${crypto.randomUUID()}`,
    );
    expect(unknown.status).toBe(404);
    const malformed = await h.call(
      "DELETE",
      `/v1/threads/${thread.thread_id}/attachments/not-a-uuid`,
    );
    expect(malformed.status).toBe(404);
    const listAsBob = await h.call("GET", `/v1/threads/${thread.thread_id}/attachments`, {
      uid: BOB,
    });
    expect(listAsBob.status).toBe(404);
    expect(onDisk(thread, attachment.original_path)).toBe(true);
  });
});
