import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  type AgentLoopInput,
  createScriptedModelClient,
  runAgentLoop,
  type ScriptedStep,
  type SubagentSpawner,
  type Tool,
} from "../../../agent-host/runs/agent/index.ts";
import { createSpawnSubagentTool } from "../../../agent-host/runs/agent/tools/spawn-subagent-tool.ts";
import { domainError, WorkcellError } from "../../../shared/errors/index.ts";
import {
  blockingTool,
  echoTool,
  eventRecorder,
  silentLogger,
  throwingTool,
  unusedToolEnv,
} from "./loop-harness.ts";

function setup(
  steps: readonly ScriptedStep[],
  options: Partial<Omit<AgentLoopInput, "model" | "emit">> & { tools?: readonly Tool[] } = {},
) {
  const model = createScriptedModelClient(steps);
  const recorder = eventRecorder();
  const input: AgentLoopInput = {
    model,
    tools: [echoTool as Tool],
    toolEnv: unusedToolEnv(),
    systemPrompt: "You are a test.",
    messages: [{ role: "user", content: "hi" }],
    signal: new AbortController().signal,
    logger: silentLogger,
    ...options,
    limits: { deltaFlushChars: 0, ...options.limits },
    emit: recorder.emit,
  };
  return { model, ...recorder, run: () => runAgentLoop(input) };
}

describe("runAgentLoop", () => {
  it("ends on a final answer, streaming it first", async () => {
    const t = setup([{ text: "Hello there, world!" }]);
    const result = await t.run();
    expect(result).toMatchObject({
      status: "succeeded",
      finalText: "Hello there, world!",
      turns: 1,
    });
    expect(t.types()).toEqual([
      "run.status",
      "message.delta",
      "message.delta",
      "message.delta",
      "message.completed",
      "run.completed",
    ]);
    const deltas = t.events.flatMap((e) => (e.type === "message.delta" ? [e.data.text] : []));
    expect(deltas.join("")).toBe("Hello there, world!");
    expect(t.events.at(-1)).toEqual({ type: "run.completed", data: { status: "succeeded" } });
    // The model saw the system prompt, then the conversation.
    expect(t.model.requests[0]?.messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect(t.model.requests[0]?.tools.map((s) => s.name)).toEqual(["echo"]);
  });

  it("batches deltas when asked to", async () => {
    const t = setup([{ text: "Hello there, world!" }], { limits: { deltaFlushChars: 1000 } });
    await t.run();
    expect(t.types().filter((type) => type === "message.delta")).toHaveLength(1);
  });

  it("a timed-out call answered at once fails command_timeout; a model that tries again succeeds", async () => {
    const slow: Tool<Record<string, never>> = {
      name: "slow",
      description: "Times out.",
      parameters: z.strictObject({}),
      async execute() {
        return { isError: true, content: "[timed out]", details: { status: "timed_out" } };
      },
    };
    const gaveUp = setup([{ toolCalls: [{ name: "slow", arguments: {} }] }, { text: "done" }], {
      tools: [slow as Tool],
    });
    expect(await gaveUp.run()).toMatchObject({
      status: "failed",
      error: { code: "command_timeout" },
      finalText: "done",
    });
    const retried = setup(
      [
        { toolCalls: [{ name: "slow", arguments: {} }] },
        { toolCalls: [{ name: "echo", arguments: { text: "faster" } }] },
        { text: "done" },
      ],
      { tools: [slow as Tool, echoTool as Tool] },
    );
    expect(await retried.run()).toMatchObject({ status: "succeeded", finalText: "done" });
  });

  it("runs tool calls in order and feeds their results back", async () => {
    const t = setup([
      {
        toolCalls: [
          { name: "echo", arguments: { text: "one" } },
          { name: "echo", arguments: { text: "two" } },
        ],
      },
      { text: "done" },
    ]);
    const result = await t.run();
    expect(result.status).toBe("succeeded");
    expect(t.types()).toEqual([
      "run.status",
      "tool.started",
      "tool.completed",
      "tool.started",
      "tool.completed",
      "message.delta",
      "message.completed",
      "run.completed",
    ]);
    expect(t.events[1]).toEqual({
      type: "tool.started",
      data: { tool_call_id: "call_1_1", name: "echo", input: { text: "one" } },
    });
    expect(t.events[2]).toEqual({
      type: "tool.completed",
      data: { tool_call_id: "call_1_1", is_error: false, output: { text: "one" } },
    });
    const second = t.model.requests[1]?.messages ?? [];
    expect(second.slice(-3)).toEqual([
      {
        role: "assistant",
        content: "",
        toolCalls: [
          { id: "call_1_1", name: "echo", arguments: '{"text":"one"}' },
          { id: "call_1_2", name: "echo", arguments: '{"text":"two"}' },
        ],
      },
      { role: "tool", toolCallId: "call_1_1", content: "one" },
      { role: "tool", toolCallId: "call_1_2", content: "two" },
    ]);
    expect(result.newMessages).toHaveLength(4);
  });

  it("stops at maxTurns without a final answer", async () => {
    const loopForever = { toolCalls: [{ name: "echo", arguments: { text: "again" } }] };
    const t = setup([loopForever, loopForever, loopForever], { limits: { maxTurns: 2 } });
    const result = await t.run();
    expect(result).toMatchObject({ status: "failed", turns: 2, finalText: "" });
    expect(result.error?.code).toBe("max_turns_exceeded");
    expect(t.model.requests).toHaveLength(2);
    expect(t.events.at(-1)).toMatchObject({
      type: "run.completed",
      data: { status: "failed", error: { code: "max_turns_exceeded" } },
    });
  });

  it("stops when the token budget is spent", async () => {
    const step = {
      toolCalls: [{ name: "echo", arguments: { text: "x" } }],
      usage: { inputTokens: 60, outputTokens: 10 },
    };
    const t = setup([step, step, step], { limits: { maxTotalTokens: 100 } });
    const result = await t.run();
    expect(result.error?.code).toBe("token_budget_exceeded");
    expect(result.usage).toEqual({ inputTokens: 120, outputTokens: 20 });
    expect(t.model.requests).toHaveLength(2);
  });

  describe("tool errors are results, and the run goes on", () => {
    it.each([
      [
        "a refusal of the file layer",
        throwingTool("refuse", () => domainError("symlink_refused")),
        "Error (forbidden: symlink_refused)",
      ],
      [
        "a conflict",
        throwingTool("refuse", () => domainError("name_exists")),
        "Error (conflict: name_exists)",
      ],
      [
        "a not-found",
        throwingTool("refuse", () => new WorkcellError("not_found", "No such file: x.")),
        "Error (not_found): No such file: x.",
      ],
    ])("%s", async (_label, tool, expected) => {
      const t = setup(
        [{ toolCalls: [{ name: "refuse", arguments: {} }] }, { text: "I could not, sorry." }],
        { tools: [tool as Tool] },
      );
      const result = await t.run();
      expect(result.status).toBe("succeeded");
      const completed = t.events.find((e) => e.type === "tool.completed");
      expect(completed).toMatchObject({ data: { is_error: true } });
      const fedBack = t.model.requests[1]?.messages.at(-1);
      expect(fedBack).toMatchObject({ role: "tool" });
      expect(fedBack?.content).toContain(expected);
    });

    it("an unknown tool, malformed JSON and arguments off the schema", async () => {
      const t = setup([
        {
          toolCalls: [
            { name: "nope", arguments: {} },
            { name: "echo", arguments: "{not json" },
            { name: "echo", arguments: { text: 42 } },
          ],
        },
        { text: "ok" },
      ]);
      const result = await t.run();
      expect(result.status).toBe("succeeded");
      const results = (t.model.requests[1]?.messages ?? []).filter((m) => m.role === "tool");
      expect(results.map((m) => m.content)).toEqual([
        expect.stringContaining("There is no tool 'nope'. Available tools: echo."),
        expect.stringContaining("not valid JSON"),
        expect.stringContaining("do not match its schema"),
      ]);
      // The malformed input is still shown in the event, as the model wrote it.
      expect(t.events.filter((e) => e.type === "tool.started")[1]).toMatchObject({
        data: { input: "{not json" },
      });
    });

    it("cuts a huge result to maxToolOutputBytes", async () => {
      const t = setup(
        [{ toolCalls: [{ name: "echo", arguments: { text: "é".repeat(1000) } }] }, { text: "ok" }],
        { limits: { maxToolOutputBytes: 101 } },
      );
      await t.run();
      // Head (76 bytes → 38 characters) and tail (25 bytes → 12), never half a character.
      const fedBack = t.model.requests[1]?.messages.at(-1)?.content ?? "";
      expect(fedBack).toBe(
        `${"é".repeat(38)}\n[output truncated: 1900 bytes omitted here; narrow the command or read the file in parts]\n${"é".repeat(12)}`,
      );
    });
  });

  describe("fatal tool errors end the run", () => {
    it("an unexpected error: failed/tool_interrupted (the command may have run), without leaking its message", async () => {
      const t = setup([{ toolCalls: [{ name: "boom", arguments: {} }] }, { text: "never" }], {
        tools: [throwingTool("boom", () => new Error("/srv/data-root/secret path")) as Tool],
      });
      const result = await t.run();
      expect(result).toMatchObject({ status: "failed", error: { code: "tool_interrupted" } });
      expect(result.error?.message).toContain("the command may have completed; check the Workdir");
      expect(result.error?.message).not.toMatch(/retry the run/);
      expect(JSON.stringify(t.events)).not.toContain("/srv/data-root");
      expect(t.model.requests).toHaveLength(1);
    });

    it("a sandbox generation that is over mid-call: failed/tool_interrupted, never 'retry the run'", async () => {
      const t = setup(
        [
          {
            toolCalls: [
              { name: "gone", arguments: {} },
              { name: "echo", arguments: { text: "not run" } },
            ],
          },
        ],
        {
          tools: [
            throwingTool("gone", () => domainError("stale_generation")) as Tool,
            echoTool as Tool,
          ],
        },
      );
      const result = await t.run();
      expect(result).toMatchObject({ status: "failed", error: { code: "tool_interrupted" } });
      expect(t.types().filter((type) => type === "tool.started")).toHaveLength(1);
      // The transcript stays well-formed: every call has a result.
      expect(result.newMessages.filter((m) => m.role === "tool")).toHaveLength(2);
    });
  });

  describe("a Docker engine that did not answer", () => {
    const engineTimeout = (commandRan: string) =>
      setup([{ toolCalls: [{ name: "hung", arguments: {} }] }, { text: "never" }], {
        tools: [
          throwingTool("hung", () =>
            domainError("sandbox_engine_unresponsive", {
              message: `Docker did not answer (${commandRan})`,
              details: { command_ran: commandRan },
            }),
          ) as Tool,
        ],
      });

    it("before the command ran: failed with its own code, the message says nothing ran", async () => {
      const result = await engineTimeout("no").run();
      expect(result).toMatchObject({
        status: "failed",
        error: { code: "sandbox_engine_unresponsive", message: "Docker did not answer (no)" },
      });
    });

    it("once the command may have run: failed/tool_interrupted with the engine's message", async () => {
      for (const ran of ["maybe", "yes"]) {
        const result = await engineTimeout(ran).run();
        expect(result).toMatchObject({
          status: "failed",
          error: { code: "tool_interrupted", message: `Docker did not answer (${ran})` },
        });
      }
    });
  });

  it("a model failure fails the run with its kind", async () => {
    const t = setup([
      { failure: { kind: "rate_limited", message: "Slow down.", httpStatus: 429 } },
    ]);
    const result = await t.run();
    expect(result).toMatchObject({
      status: "failed",
      error: { code: "model_rate_limited", message: "Slow down." },
    });
  });

  describe("cancellation", () => {
    it("before the first turn", async () => {
      const controller = new AbortController();
      controller.abort();
      const t = setup([{ text: "never" }], { signal: controller.signal });
      const result = await t.run();
      expect(result.status).toBe("cancelled");
      expect(t.model.requests).toHaveLength(0);
      expect(t.types()).toEqual(["run.status", "run.completed"]);
    });

    it("during a tool: the tool's signal aborts, no further turn", async () => {
      const controller = new AbortController();
      const blocking = blockingTool();
      const t = setup(
        [
          {
            toolCalls: [
              { name: "block", arguments: {} },
              { name: "echo", arguments: { text: "not run" } },
            ],
          },
          { text: "never" },
        ],
        { tools: [blocking.tool as Tool, echoTool as Tool], signal: controller.signal },
      );
      const running = t.run();
      await blocking.started;
      controller.abort();
      const result = await running;
      expect(result.status).toBe("cancelled");
      expect(t.model.requests).toHaveLength(1);
      expect(t.types()).toEqual(["run.status", "tool.started", "tool.completed", "run.completed"]);
      expect(t.events[2]).toMatchObject({ data: { is_error: true } });
      expect(t.events[3]).toEqual({ type: "run.completed", data: { status: "cancelled" } });
    });

    it("during a model call", async () => {
      const controller = new AbortController();
      const t = setup(
        [
          {
            respond: async (request, signal) => {
              await request.onTextDelta?.("partial ");
              controller.abort();
              signal.throwIfAborted();
              throw new Error("unreachable");
            },
          },
        ],
        { signal: controller.signal },
      );
      const result = await t.run();
      expect(result.status).toBe("cancelled");
      expect(t.types()).toEqual(["run.status", "message.delta", "run.completed"]);
    });
  });

  it("rejects with emit's error and writes nothing more", async () => {
    const model = createScriptedModelClient([
      { toolCalls: [{ name: "echo", arguments: { text: "x" } }] },
      { text: "never" },
    ]);
    const lost = domainError("lease_lost");
    const seen: string[] = [];
    const running = runAgentLoop({
      model,
      tools: [echoTool as Tool],
      toolEnv: unusedToolEnv(),
      systemPrompt: "",
      messages: [{ role: "user", content: "hi" }],
      signal: new AbortController().signal,
      logger: silentLogger,
      emit: (event) => {
        seen.push(event.type);
        if (event.type === "tool.completed") throw lost;
      },
    });
    await expect(running).rejects.toBe(lost);
    expect(seen).toEqual(["run.status", "tool.started", "tool.completed"]);
    expect(model.requests).toHaveLength(1);
    expect(model.requests[0]?.messages[0]?.role).toBe("user");
  });

  it("spawn_subagent reports the child in the parent's stream", async () => {
    const tasks: string[] = [];
    const subagents: SubagentSpawner = {
      async spawn(request) {
        tasks.push(request.task);
        await request.onStarted({ runId: "child-run", threadId: "child-thread" });
        return {
          runId: "child-run",
          threadId: "child-thread",
          status: "succeeded",
          finalText: "42",
        };
      },
    };
    const t = setup(
      [
        { toolCalls: [{ name: "spawn_subagent", arguments: { task: "compute the answer" } }] },
        { text: "The answer is 42." },
      ],
      { tools: [createSpawnSubagentTool() as Tool], toolEnv: unusedToolEnv({ subagents }) },
    );
    const result = await t.run();
    expect(result.status).toBe("succeeded");
    expect(tasks).toEqual(["compute the answer"]);
    expect(t.types()).toEqual([
      "run.status",
      "tool.started",
      "subagent.started",
      "subagent.completed",
      "tool.completed",
      "message.delta",
      "message.delta",
      "message.delta",
      "message.completed",
      "run.completed",
    ]);
    expect(t.events[2]).toEqual({
      type: "subagent.started",
      data: { tool_call_id: "call_1_1", run_id: "child-run", thread_id: "child-thread" },
    });
    expect(t.model.requests[1]?.messages.at(-1)?.content).toBe("42");
  });

  it("spawn_subagent without a spawner is a refusal", async () => {
    const t = setup(
      [{ toolCalls: [{ name: "spawn_subagent", arguments: { task: "x" } }] }, { text: "fine" }],
      { tools: [createSpawnSubagentTool() as Tool] },
    );
    expect((await t.run()).status).toBe("succeeded");
    expect(t.model.requests[1]?.messages.at(-1)?.content).toContain("subagents_unavailable");
  });

  it("refuses two tools of one name", async () => {
    const t = setup([{ text: "x" }], { tools: [echoTool as Tool, echoTool as Tool] });
    await expect(t.run()).rejects.toThrow("Two tools are named 'echo'");
  });
});
