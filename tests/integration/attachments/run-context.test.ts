import { eq } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  ATTACHMENT_CONTEXT_OPEN,
  withAttachmentContext,
} from "../../../agent-host/attachments/attachment-context.ts";
import { listThreadAttachments } from "../../../agent-host/attachments/list-thread-attachments.ts";
import type { Attachment } from "../../../shared/contracts/attachment.ts";
import { agentRuns, messages } from "../../../shared/db/schema.ts";
import {
  ALICE,
  type AttachmentsHarness,
  startAttachmentsHarness,
} from "./support/attachments-harness.ts";

let h: AttachmentsHarness;

beforeAll(async () => {
  h = await startAttachmentsHarness();
});
afterAll(async () => {
  await h?.close();
});

describe("run context", () => {
  test("the run's model-visible message lists the attachments; the stored message and run keep the original", async () => {
    const thread = await h.createThread();
    const group = await h.requestUploads([
      { name: "report.txt", size: 6, content_type: "text/plain" },
      { name: "photo.png", size: 4, content_type: "image/png" },
    ]);
    await h.put(group.items[0] as (typeof group.items)[number], "report");
    await h.put(
      group.items[1] as (typeof group.items)[number],
      Buffer.from([0x89, 0x50, 0x4e, 0x47]),
    );
    const confirmed = await h.confirm(thread.thread_id, {
      group_id: group.group_id,
      items: [
        { file_id: group.items[0]?.file_id, parse: true },
        { file_id: group.items[1]?.file_id },
      ],
    });
    expect(confirmed.status).toBe(200);
    const items = ((await confirmed.json()) as { items: Attachment[] }).items;

    const input = "Summarize the report, please.";
    const submitted = await h.call("POST", `/v1/threads/${thread.thread_id}/runs`, {
      body: { input },
    });
    expect(submitted.status).toBe(202);
    const { run_id } = (await submitted.json()) as { run_id: string };

    // What the worker does when the run starts: the thread's attachments into the model's
    // copy of the user message.
    const [stored] = await h.db
      .select()
      .from(messages)
      .where(eq(messages.threadId, thread.thread_id));
    if (stored === undefined) throw new Error("no stored message");
    const listed = await listThreadAttachments(h.db, ALICE, thread.thread_id);
    expect(listed.map((a) => a.fileName)).toEqual(["report.txt", "photo.png"]);
    const modelText = withAttachmentContext(stored.content, listed, thread.workdir_path);

    const root = `/home/gem/user-data/${thread.workdir_path}`;
    expect(modelText.startsWith(input)).toBe(true);
    expect(modelText).toContain(ATTACHMENT_CONTEXT_OPEN);
    expect(modelText).toContain(
      `- report.txt: ${root}/uploads/report.txt (extracted text: ${root}/uploads/attachments/report.txt.md)`,
    );
    expect(modelText).toContain(`- photo.png: ${root}/uploads/photo.png`);
    expect(items.map((i) => i.original_path)).toEqual(["uploads/report.txt", "uploads/photo.png"]);
    // A resumed run rebuilding from the model copy does not inject twice.
    expect(withAttachmentContext(modelText, listed, thread.workdir_path)).toBe(modelText);

    // The stored message, and the run's input, are the user's words only.
    const [after] = await h.db
      .select()
      .from(messages)
      .where(eq(messages.threadId, thread.thread_id));
    expect(after?.content).toBe(input);
    const [run] = await h.db.select().from(agentRuns).where(eq(agentRuns.runId, run_id));
    expect(run?.input).toBe(input);
  });

  test("a thread without attachments: the text unchanged", async () => {
    const thread = await h.createThread();
    const listed = await listThreadAttachments(h.db, ALICE, thread.thread_id);
    expect(withAttachmentContext("hello", listed, thread.workdir_path)).toBe("hello");
  });
});
