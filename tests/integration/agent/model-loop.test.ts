import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import {
  type AgentEvent,
  buildSystemPrompt,
  createAgentTools,
  createOpenAiCompatibleClient,
  DEFAULT_OPENAI_COMPATIBLE_CONFIG,
  runAgentLoop,
  type SandboxExec,
} from "../../../agent-host/runs/agent/index.ts";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import { type DataRoot, freshDataRoot } from "../../support/data-root.ts";
import { testLogger } from "../../support/test-logger.ts";
import {
  type ChatServer,
  openStream,
  send,
  startChatServer,
  textChunk,
  toolChunk,
} from "./chat-server.ts";

const logger = testLogger();
const WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";

let server: ChatServer | undefined;
let root: DataRoot | undefined;
afterEach(async () => {
  await server?.close();
  await root?.remove();
});

// The whole path with a real HTTP model: the model asks for a write into the skills
// mount, the refusal goes back to it as the call's result, and it answers.
it("a path escape asked for by a real model is refused, reported, and the run goes on", async () => {
  root = await freshDataRoot();
  const sys = createLibcSyscalls();
  const users = createUserWorkspaces({
    dataRoot: root.path,
    sys,
    resolver: createPathResolver(sys),
  });
  (await users.ensureManagedWorkdir("bob", WORKDIR)).close();
  const workspace = await users.openUserWorkspace("bob");

  server = await startChatServer((request, res, attempt) => {
    openStream(res);
    if (attempt === 1) {
      send(
        res,
        toolChunk([
          { index: 0, id: "call_1", name: "write_file", arguments: '{"path":"/home/gem/' },
        ]),
      );
      send(
        res,
        toolChunk(
          [{ index: 0, arguments: 'skills/pdf/SKILL.md","content":"evil"}' }],
          "tool_calls",
        ),
      );
    } else {
      const last = (request.body.messages as { role: string; content: string }[]).at(-1);
      send(
        res,
        textChunk(
          last?.content.includes("skills_read_only") ? "Refused, as expected." : "??",
          "stop",
        ),
      );
    }
    send(res, "[DONE]");
    res.end();
  });
  const model = createOpenAiCompatibleClient({
    config: { ...DEFAULT_OPENAI_COMPATIBLE_CONFIG, baseUrl: server.baseUrl, model: "test-model" },
    logger,
  });
  const noSandbox: SandboxExec = { exec: () => Promise.reject(new Error("not used")) };
  const events: AgentEvent[] = [];
  try {
    const result = await runAgentLoop({
      model,
      tools: createAgentTools(),
      toolEnv: { sandbox: noSandbox, workspace, workdirPath: WORKDIR },
      systemPrompt: buildSystemPrompt({ workdirPath: WORKDIR }),
      messages: [{ role: "user", content: "Edit the pdf skill." }],
      signal: new AbortController().signal,
      logger,
      emit: (event) => void events.push(event),
    });
    expect(result).toMatchObject({
      status: "succeeded",
      finalText: "Refused, as expected.",
      turns: 2,
    });
  } finally {
    workspace.close();
  }
  const sentTools = (
    (server.requests[0]?.body.tools ?? []) as { function: { name: string } }[]
  ).map((t) => t.function.name);
  expect(sentTools).toEqual(["bash", "read_file", "write_file", "list_dir", "spawn_subagent"]);
  expect(events.find((e) => e.type === "tool.completed")).toMatchObject({
    data: { tool_call_id: "call_1", is_error: true, output: { reason: "skills_read_only" } },
  });
  expect(existsSync(join(root.path, "skills"))).toBe(false);
});
