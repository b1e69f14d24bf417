import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createScriptedModelClient,
  runAgentLoop,
  type Tool,
} from "../../../agent-host/runs/agent/index.ts";
import { domainError } from "../../../shared/errors/index.ts";
import { echoTool, setup, silentLogger, unusedToolEnv } from "./loop-harness.ts";

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
    ]);
    const deltas = t.events.flatMap((e) => (e.type === "message.delta" ? [e.data.text] : []));
    expect(deltas.join("")).toBe("Hello there, world!");
    // The ending is the result; finishRun alone writes `run.completed` (issue 33).
    expect(t.types()).not.toContain("run.completed");
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
    expect(t.types()).not.toContain("run.completed");
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

  it("refuses two tools of one name", async () => {
    const t = setup([{ text: "x" }], { tools: [echoTool as Tool, echoTool as Tool] });
    await expect(t.run()).rejects.toThrow("Two tools are named 'echo'");
  });
});
