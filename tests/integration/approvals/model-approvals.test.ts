import type { ServerResponse } from "node:http";
import { afterEach, beforeEach, expect, it } from "vitest";
import { modelConfigSchema } from "../../../agent-host/runs/agent/model-config.ts";
import { modelClientFactoryFor } from "../../../agent-host/runs/index.ts";
import { pollUntil } from "../../support/poll-until.ts";
import {
  type ChatServer,
  openStream,
  type RecordedRequest,
  send,
  startChatServer,
  textChunk,
  toolChunk,
} from "../agent/chat-server.ts";
import { type RunWorld, runWorld } from "../runs/run-harness.ts";
import { approvalsOf, awaitPause, decide, EFFECT_COMMAND, effectCount } from "./approval-world.ts";

let world: RunWorld;
let server: ChatServer | undefined;

beforeEach(async () => {
  world = await runWorld();
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await world.cleanup();
});

type WireMessage = { role: string; content?: string; tool_calls?: { id: string }[] };

function reply(res: ServerResponse, chunks: unknown[]): void {
  openStream(res);
  for (const chunk of chunks) send(res, chunk);
  send(res, "[DONE]");
  res.end();
}

/**
 * The model's side of a two-tool conversation, decided by what it has been told so far:
 * first write_file (no approval), then bash (it asks), then a final answer.
 */
function twoTools(request: RecordedRequest, res: ServerResponse): void {
  const messages = request.body.messages as WireMessage[];
  const tools = messages.filter((m) => m.role === "tool").length;
  if (tools === 0) {
    const args = JSON.stringify({ path: "outputs/notes.txt", content: "first" });
    reply(res, [
      toolChunk(
        [{ index: 0, id: "call_write", name: "write_file", arguments: args }],
        "tool_calls",
      ),
    ]);
  } else if (tools === 1) {
    const args = JSON.stringify({ command: EFFECT_COMMAND });
    reply(res, [
      toolChunk([{ index: 0, id: "call_bash", name: "bash", arguments: args }], "tool_calls"),
    ]);
  } else {
    reply(res, [textChunk("All done."), textChunk("", "stop")]);
  }
}

it("with a model: the second call waits, a restarted node resumes with the whole conversation", async () => {
  server = await startChatServer(twoTools);
  const model = modelClientFactoryFor(
    modelConfigSchema.parse({
      kind: "openai-compatible",
      baseUrl: server.baseUrl,
      model: "test-model",
    }),
  );
  const first = await world.worker({ model });
  const project = await world.project();
  const thread = await world.thread(project);
  const runId = await world.submit(thread, "Write a note, then run the command.", {
    approvals: { tools: ["bash"] },
  });
  const approval = await awaitPause(world, runId);
  expect(approval).toMatchObject({ tool: "bash", arguments: { command: EFFECT_COMMAND } });
  expect(effectCount(world, project)).toBe(0);
  expect(server.requests).toHaveLength(2);
  await first.stop();

  await world.worker({ model });
  await decide(world, project.uid, approval, { decision: "approve" });
  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  expect(effectCount(world, project)).toBe(1);
  expect(await world.assistantMessages(thread)).toEqual(["All done."]);

  // The model was not asked again for the approved call: the resume ran the stored one, and
  // its next request carried the whole conversation, in order.
  expect(server.requests).toHaveLength(3);
  const last = server.requests[2]?.body.messages as WireMessage[];
  expect(last.map((m) => m.role)).toEqual([
    "system",
    "user",
    "assistant",
    "tool",
    "assistant",
    "tool",
  ]);
  expect(last[1]?.content).toBe("Write a note, then run the command.");
  expect(last[2]?.tool_calls?.[0]?.id).toBe("call_write");
  expect(last[4]?.tool_calls?.[0]?.id).toBe("call_bash");
  expect(last[5]?.content).toContain("done");
});

/** Two bash calls in two turns, then a final answer. */
function twoCommands(request: RecordedRequest, res: ServerResponse): void {
  const messages = request.body.messages as WireMessage[];
  const tools = messages.filter((m) => m.role === "tool").length;
  if (tools < 2) {
    const args = JSON.stringify({ command: EFFECT_COMMAND });
    const id = `call_${tools + 1}`;
    reply(res, [toolChunk([{ index: 0, id, name: "bash", arguments: args }], "tool_calls")]);
  } else {
    reply(res, [textChunk("Twice."), textChunk("", "stop")]);
  }
}

it('"approve for this run": the same tool runs again in the run without asking', async () => {
  server = await startChatServer(twoCommands);
  const model = modelClientFactoryFor(
    modelConfigSchema.parse({
      kind: "openai-compatible",
      baseUrl: server.baseUrl,
      model: "test-model",
    }),
  );
  await world.worker({ model });
  const project = await world.project();
  const thread = await world.thread(project);
  const runId = await world.submit(thread, "Run it twice.", { approvals: { tools: ["bash"] } });
  const approval = await awaitPause(world, runId);
  await decide(world, project.uid, approval, { decision: "approve", scope: "run" });
  const run = await world.waitForRun(runId);
  expect(run.status).toBe("succeeded");
  expect(effectCount(world, project)).toBe(2);
  const rows = await approvalsOf(world, runId);
  expect(rows.map((r) => [r.status, r.scope])).toEqual([["approved", "run"]]);
});

it("approve once: the same tool asks again on its next call", async () => {
  server = await startChatServer(twoCommands);
  const model = modelClientFactoryFor(
    modelConfigSchema.parse({
      kind: "openai-compatible",
      baseUrl: server.baseUrl,
      model: "test-model",
    }),
  );
  await world.worker({ model });
  const project = await world.project();
  const runId = await world.submit(await world.thread(project), "Run it twice.", {
    approvals: { tools: ["bash"] },
  });
  const first = await awaitPause(world, runId);
  await decide(world, project.uid, first, { decision: "approve" });
  await pollUntil(async () => (await approvalsOf(world, runId)).length === 2, {
    what: "the second call to ask",
    intervalMs: 100,
  });
  const second = await awaitPause(world, runId);
  expect(effectCount(world, project)).toBe(1);
  await decide(world, project.uid, second, { decision: "deny", note: "once is enough" });
  const run = await world.waitForRun(runId);
  // A model goes on after a denial: the run ends as the model decides.
  expect(run.status).toBe("succeeded");
  expect(effectCount(world, project)).toBe(1);
  const last = server.requests.at(-1)?.body.messages as WireMessage[];
  expect(last.at(-1)?.content).toContain("once is enough");
});
