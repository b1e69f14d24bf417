import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { attachments } from "../../../shared/db/schema.ts";
import { type RunWorld, runWorld, UID } from "./run-harness.ts";
import { scriptedModels } from "./scripted-models.ts";

let world: RunWorld;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await world.cleanup();
});

it("a run's model sees the thread so far, the Workdir, and the thread's attachments", async () => {
  const models = scriptedModels((request) => [{ text: `answer to ${request.input}` }]);
  await world.worker({ model: models.factory });
  const project = await world.project();
  const thread = await world.thread(project);

  const first = await world.submit(thread, "first question");
  expect((await world.waitForRun(first)).status).toBe("succeeded");
  await world.db.insert(attachments).values({
    fileId: randomUUID(),
    uid: UID,
    threadId: thread,
    fileName: "report.pdf",
    contentType: "application/pdf",
    size: 3,
    path: "uploads/attachments/report.pdf.md",
    originalPath: "uploads/report.pdf",
  });
  const second = await world.submit(thread, "second question");
  expect((await world.waitForRun(second)).status).toBe("succeeded");

  const request = models.clients[1]?.client.requests[0];
  const [system, ...conversation] = request?.messages ?? [];
  expect(system?.role).toBe("system");
  expect(system?.content).toContain(`/home/gem/user-data/${project.workdirPath}`);
  expect(system?.content).toContain("No skills are available");
  expect(conversation).toEqual([
    { role: "user", content: "first question" },
    { role: "assistant", content: "answer to first question", toolCalls: [] },
    {
      role: "user",
      // The user's text, then the attachments by their paths inside the sandbox (0009 §6).
      content: expect.stringMatching(/^second question\n\n<workcell-attachments>\n/),
    },
  ]);
  const root = `/home/gem/user-data/${project.workdirPath}`;
  expect(conversation[2]?.content).toContain(
    `- report.pdf: ${root}/uploads/report.pdf (extracted text: ${root}/uploads/attachments/report.pdf.md)`,
  );
  // Stored messages keep the user's own words and the answers.
  expect(await world.assistantMessages(thread)).toEqual([
    "answer to first question",
    "answer to second question",
  ]);
});

it("agent.max_steps bounds the loop of a run", async () => {
  const models = scriptedModels(() => [
    { toolCalls: [{ name: "bash", arguments: { command: "true" } }] },
    { toolCalls: [{ name: "bash", arguments: { command: "true" } }] },
    { text: "never reached" },
  ]);
  await world.worker({ model: models.factory });
  const thread = await world.thread(await world.project());
  const runId = await world.submit(thread, "loop", { max_steps: 2 });
  const run = await world.waitForRun(runId);
  expect(run).toMatchObject({ status: "failed", error: { code: "max_turns_exceeded" } });
});
