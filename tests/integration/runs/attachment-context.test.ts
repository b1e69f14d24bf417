import { randomUUID } from "node:crypto";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, expect, it } from "vitest";
import {
  ATTACHMENT_CONTEXT_OPEN,
  withAttachmentContext,
} from "../../../agent-host/attachments/attachment-context.ts";
import { attachments, messages } from "../../../shared/db/schema.ts";
import { expectGapFree, type RunWorld, runWorld, UID } from "./run-harness.ts";
import { scriptedModels } from "./scripted-models.ts";

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

async function attach(threadId: string, fileName: string, parsed: boolean): Promise<void> {
  await world.db.insert(attachments).values({
    fileId: randomUUID(),
    uid: UID,
    threadId,
    fileName,
    contentType: parsed ? "application/pdf" : "image/png",
    size: 3,
    path: parsed ? `uploads/attachments/${fileName}.md` : `uploads/${fileName}`,
    originalPath: `uploads/${fileName}`,
  });
}

const blocksIn = (text: string) => text.split(ATTACHMENT_CONTEXT_OPEN).length - 1;

/** The user message of the conversation each model client saw, in order. */
function userTexts(models: ReturnType<typeof scriptedModels>): string[] {
  return models.clients.map(({ client }) => {
    const last = client.requests[0]?.messages.at(-1);
    if (last?.role !== "user") throw new Error("the model's last message is not the user's");
    return String(last.content);
  });
}

it("a run that waited while the node was quiesced lists the attachments once, with their sandbox paths", async () => {
  await world.sandboxManager.quiesce(AbortSignal.timeout(30_000));
  const models = scriptedModels(() => [{ text: "ok" }]);
  await world.worker({
    model: models.factory,
    limits: { handBackDelaySeconds: 1, waitingPollMs: 200 },
  });
  const project = await world.project();
  const thread = await world.thread(project);
  await attach(thread, "report.pdf", true);
  await attach(thread, "photo.png", false);

  const runId = await world.submit(thread, "what is in them?");
  // Since fair share (decision 0037) a quiesced node claims nothing: the run's message was
  // taken and the run waits in Postgres, unclaimed, until the node is active again.
  const waiting = await world.waitForRun(runId, (run) => run.waitingSince !== null);
  expect(waiting).toMatchObject({ status: "pending", attempt: 0 });
  await world.sandboxManager.resume(AbortSignal.timeout(30_000));
  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  expect(run.attempt).toBe(1);
  expectGapFree(await world.events(runId));

  const [seen] = userTexts(models);
  expect(models.clients).toHaveLength(1);
  const root = `/home/gem/user-data/${project.workdirPath}`;
  expect(seen).toBe(
    [
      "what is in them?",
      "",
      ATTACHMENT_CONTEXT_OPEN,
      "Files attached to this conversation (read them with your tools when they are relevant):",
      `- report.pdf: ${root}/uploads/report.pdf (extracted text: ${root}/uploads/attachments/report.pdf.md)`,
      `- photo.png: ${root}/uploads/photo.png`,
      "</workcell-attachments>",
    ].join("\n"),
  );
  // The model's copy only: the run's input and the stored message are the user's words.
  expect(run.input).toBe("what is in them?");
  const stored = await world.db
    .select({ role: messages.role, content: messages.content })
    .from(messages)
    .where(eq(messages.threadId, thread));
  expect(stored.find((m) => m.role === "user")?.content).toBe("what is in them?");
});

it("a user text that already carries the block (an earlier model copy) is not given a second one", async () => {
  const models = scriptedModels(() => [{ text: "ok" }]);
  await world.worker({ model: models.factory });
  const project = await world.project();
  const thread = await world.thread(project);
  await attach(thread, "a.png", false);
  const modelCopy = withAttachmentContext(
    "again",
    [{ fileName: "a.png", path: "uploads/a.png", originalPath: "uploads/a.png" }],
    project.workdirPath,
  );
  const runId = await world.submit(thread, modelCopy);
  expect((await world.waitForRun(runId)).status).toBe("succeeded");
  const [seen] = userTexts(models);
  expect(seen).toBe(modelCopy);
  expect(blocksIn(seen ?? "")).toBe(1);
});

it("earlier runs' messages in the history carry no block; only the run's own message does", async () => {
  const models = scriptedModels((request) => [{ text: `re: ${request.input}` }]);
  await world.worker({ model: models.factory });
  const thread = await world.thread(await world.project());
  await attach(thread, "a.png", false);
  const first = await world.submit(thread, "one");
  expect((await world.waitForRun(first)).status).toBe("succeeded");
  const second = await world.submit(thread, "two");
  expect((await world.waitForRun(second)).status).toBe("succeeded");

  const conversation = models.clients[1]?.client.requests[0]?.messages.slice(1) ?? [];
  expect(conversation.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  expect(conversation[0]?.content).toBe("one");
  expect(blocksIn(String(conversation[2]?.content))).toBe(1);
});

it("the shell model executes the user's own text, never the attachment block", async () => {
  await world.worker();
  const thread = await world.thread(await world.project());
  await attach(thread, "a.png", false);
  const runId = await world.submit(thread, "echo plain");
  expect((await world.waitForRun(runId)).status).toBe("succeeded");
  expect(await world.assistantMessages(thread)).toEqual(["plain\n"]);
});
