import { describe, expect, it } from "vitest";
import {
  createModelClient,
  createScriptedModelClient,
  createShellModelClient,
  type ModelRequest,
  modelConfigSchema,
  type ToolSpec,
} from "../../../agent-host/runs/agent/index.ts";
import { silentLogger } from "./loop-harness.ts";

const bash: ToolSpec = { name: "bash", description: "", parameters: { type: "object" } };
const signal = new AbortController().signal;

describe("shell model", () => {
  it("turns the user's message into one bash call, then replies with its output", async () => {
    const model = createShellModelClient();
    const first: ModelRequest = {
      messages: [
        { role: "system", content: "ignored" },
        { role: "user", content: "ls -la && echo 'hi'" },
      ],
      tools: [bash],
    };
    const call = await model.complete(first, signal);
    expect(call.ok && call.turn).toEqual({
      message: {
        role: "assistant",
        content: "",
        toolCalls: [
          {
            id: "shell_1",
            name: "bash",
            arguments: JSON.stringify({ command: "ls -la && echo 'hi'" }),
          },
        ],
      },
      finishReason: "tool_calls",
    });
    if (!call.ok) return;
    const deltas: string[] = [];
    const reply = await model.complete(
      {
        messages: [
          ...first.messages,
          call.turn.message,
          { role: "tool", toolCallId: "shell_1", content: "hi\n" },
        ],
        tools: [bash],
        onTextDelta: (text) => void deltas.push(text),
      },
      signal,
    );
    expect(reply.ok && reply.turn.message).toEqual({
      role: "assistant",
      content: "hi\n",
      toolCalls: [],
    });
    expect(deltas).toEqual(["hi\n"]);
  });

  it("needs the bash tool", async () => {
    const result = await createShellModelClient().complete(
      { messages: [{ role: "user", content: "ls" }], tools: [] },
      signal,
    );
    expect(!result.ok && result.failure.kind).toBe("rejected");
  });
});

describe("scripted model", () => {
  it("says so when a test runs past its script", async () => {
    const model = createScriptedModelClient([{ text: "only" }]);
    await model.complete({ messages: [], tools: [] }, signal);
    const past = await model.complete({ messages: [], tools: [] }, signal);
    expect(!past.ok && past.failure.message).toContain("no step 2");
  });
});

describe("model config", () => {
  it("defaults the openai-compatible knobs and names the model", () => {
    const config = modelConfigSchema.parse({
      kind: "openai-compatible",
      baseUrl: "http://127.0.0.1:11434/v1",
      model: "llama3.1",
    });
    expect(config).toMatchObject({ maxRetries: 3, includeUsage: true, requestTimeoutMs: 60_000 });
    expect(createModelClient(config, { logger: silentLogger }).name).toBe(
      "openai-compatible:llama3.1",
    );
    expect(createModelClient(config, { logger: silentLogger, model: "qwen" }).name).toBe(
      "openai-compatible:qwen",
    );
    expect(createModelClient({ kind: "shell" }, { logger: silentLogger }).name).toBe("shell");
  });

  it("explains a bad base URL", () => {
    const result = modelConfigSchema.safeParse({
      kind: "openai-compatible",
      baseUrl: "localhost:11434",
      model: "m",
    });
    expect(result.success).toBe(false);
    expect(JSON.stringify(result.error?.issues)).toContain("must be an http:// or https:// URL");
  });
});
