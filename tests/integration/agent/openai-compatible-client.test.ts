import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import {
  createOpenAiCompatibleClient,
  DEFAULT_OPENAI_COMPATIBLE_CONFIG,
  type ModelRequest,
  type OpenAiCompatibleConfig,
  type ToolSpec,
} from "../../../agent-host/runs/agent/index.ts";
import { testLogger } from "../../support/test-logger.ts";
import {
  type ChatHandler,
  type ChatServer,
  openStream,
  send,
  startChatServer,
  textChunk,
  toolChunk,
} from "./chat-server.ts";

const logger = testLogger();
const API_KEY = "sk-test-secret-key";

const bashSpec: ToolSpec = {
  name: "bash",
  description: "Run a command.",
  parameters: {
    type: "object",
    properties: { command: { type: "string" } },
    required: ["command"],
  },
};

let server: ChatServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function clientFor(handler: ChatHandler, config: Partial<OpenAiCompatibleConfig> = {}) {
  server = await startChatServer(handler);
  return createOpenAiCompatibleClient({
    config: {
      ...DEFAULT_OPENAI_COMPATIBLE_CONFIG,
      baseUrl: server.baseUrl,
      apiKey: API_KEY,
      model: "test-model",
      retryBaseDelayMs: 5,
      retryMaxDelayMs: 20,
      ...config,
    },
    logger,
  });
}

function request(deltas: string[] = [], extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Say hello." },
    ],
    tools: [bashSpec],
    onTextDelta: (text) => void deltas.push(text),
    ...extra,
  };
}

const never = () => new AbortController().signal;

describe("openai-compatible client against a real Chat Completions server", () => {
  it("streams plain text and reports usage", async () => {
    const client = await clientFor(async (_req, res) => {
      openStream(res);
      res.write(": keep-alive comment\n\n");
      send(res, { choices: [{ index: 0, delta: { role: "assistant", content: "" } }] });
      for (const piece of ["Hel", "lo, ", "wörld", "!"]) {
        send(res, textChunk(piece));
        await sleep(1);
      }
      send(res, textChunk("", "stop"));
      send(res, {
        choices: [],
        usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 },
      });
      send(res, "[DONE]");
      res.end();
    });
    const deltas: string[] = [];
    const result = await client.complete(request(deltas, { maxOutputTokens: 256 }), never());
    expect(result).toEqual({
      ok: true,
      turn: {
        message: { role: "assistant", content: "Hello, wörld!", toolCalls: [] },
        finishReason: "stop",
        usage: { inputTokens: 12, outputTokens: 4 },
      },
    });
    expect(deltas).toEqual(["Hel", "lo, ", "wörld", "!"]);

    const sent = server?.requests[0];
    expect(sent?.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(sent?.body).toMatchObject({
      model: "test-model",
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 256,
      tool_choice: "auto",
      tools: [{ type: "function", function: bashSpec }],
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Say hello." },
      ],
    });
  });

  it("assembles tool calls split across deltas, and sends them back in the next turn", async () => {
    const client = await clientFor((_req, res) => {
      openStream(res);
      send(res, textChunk("Checking."));
      send(res, toolChunk([{ index: 0, id: "call_a", name: "bash", arguments: "" }]));
      send(res, toolChunk([{ index: 0, arguments: '{"comm' }]));
      send(res, toolChunk([{ index: 1, id: "call_b", name: "bash", arguments: '{"command":' }]));
      send(res, toolChunk([{ index: 0, arguments: 'and":"ls -la"}' }]));
      send(res, toolChunk([{ index: 1, arguments: '"pwd"}' }], "tool_calls"));
      send(res, "[DONE]");
      res.end();
    });
    const result = await client.complete(request(), never());
    expect(result.ok && result.turn).toEqual({
      message: {
        role: "assistant",
        content: "Checking.",
        toolCalls: [
          { id: "call_a", name: "bash", arguments: '{"command":"ls -la"}' },
          { id: "call_b", name: "bash", arguments: '{"command":"pwd"}' },
        ],
      },
      finishReason: "tool_calls",
    });

    // The conversation with the call and its result, in the wire format.
    if (!result.ok) throw new Error("unreachable");
    await client.complete(
      request([], {
        messages: [
          { role: "user", content: "list" },
          result.turn.message,
          { role: "tool", toolCallId: "call_a", content: "total 0" },
          { role: "tool", toolCallId: "call_b", content: "/home" },
        ],
      }),
      never(),
    );
    expect(server?.requests[1]?.body.messages).toEqual([
      { role: "user", content: "list" },
      {
        role: "assistant",
        content: "Checking.",
        tool_calls: [
          {
            id: "call_a",
            type: "function",
            function: { name: "bash", arguments: '{"command":"ls -la"}' },
          },
          {
            id: "call_b",
            type: "function",
            function: { name: "bash", arguments: '{"command":"pwd"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: "total 0" },
      { role: "tool", tool_call_id: "call_b", content: "/home" },
    ]);
  });

  it("retries a 429 (honouring Retry-After) and then succeeds", async () => {
    const client = await clientFor((_req, res, attempt) => {
      if (attempt === 1) {
        res.writeHead(429, { "content-type": "application/json", "retry-after": "0" });
        res.end(JSON.stringify({ error: { message: "Rate limit reached", type: "rate_limit" } }));
        return;
      }
      openStream(res);
      send(res, textChunk("ok", "stop"));
      send(res, "[DONE]");
      res.end();
    });
    const deltas: string[] = [];
    const result = await client.complete(request(deltas), never());
    expect(result.ok).toBe(true);
    expect(deltas).toEqual(["ok"]);
    expect(server?.requests).toHaveLength(2);
  });

  it("gives up on 5xx after maxRetries, saying so", async () => {
    const client = await clientFor(
      (_req, res) => {
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "model is loading" } }));
      },
      { maxRetries: 2 },
    );
    const result = await client.complete(request(), never());
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.failure).toMatchObject({ kind: "unavailable", httpStatus: 503 });
    expect(result.failure.message).toContain("after 3 attempts");
    expect(result.failure.message).toContain("model is loading");
    expect(server?.requests).toHaveLength(3);
  });

  it("does not retry a 400 and quotes the server's message", async () => {
    const client = await clientFor((_req, res) => {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "'tools' is not supported by this model" } }));
    });
    const result = await client.complete(request(), never());
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.failure).toMatchObject({ kind: "rejected", httpStatus: 400 });
    expect(result.failure.message).toContain("'tools' is not supported by this model");
    expect(result.failure.message).not.toContain(API_KEY);
    expect(server?.requests).toHaveLength(1);
  });

  it("says to check the key on 401 and the URL on 404", async () => {
    const client = await clientFor((_req, res, attempt) => {
      res.writeHead(attempt === 1 ? 401 : 404, { "content-type": "text/plain" });
      res.end("nope");
    });
    const unauthorized = await client.complete(request(), never());
    const missing = await client.complete(request(), never());
    expect(!unauthorized.ok && unauthorized.failure.message).toContain("check the model API key");
    expect(!missing.ok && missing.failure.message).toContain("check the base URL");
  });

  it("times out a server that never answers, after its retries", async () => {
    const client = await clientFor(() => {}, { requestTimeoutMs: 150, maxRetries: 1 });
    const result = await client.complete(request(), never());
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.failure.kind).toBe("timeout");
    expect(result.failure.message).toContain("after 2 attempts");
    expect(server?.requests).toHaveLength(2);
  });

  it("times out a stream that stalls after text, without retrying (the text was delivered)", async () => {
    const client = await clientFor(
      (_req, res) => {
        openStream(res);
        send(res, textChunk("partial"));
      },
      { requestTimeoutMs: 150, maxRetries: 3 },
    );
    const deltas: string[] = [];
    const result = await client.complete(request(deltas), never());
    expect(result.ok || result.failure.kind).toBe("timeout");
    expect(deltas).toEqual(["partial"]);
    expect(server?.requests).toHaveLength(1);
  });

  it("aborts mid-stream: rejects with the reason and closes the connection", async () => {
    const controller = new AbortController();
    const client = await clientFor((_req, res) => {
      openStream(res);
      send(res, textChunk("first"));
      // …and nothing more until the client goes away.
    });
    const reason = new Error("run cancelled");
    const running = client.complete(
      request([], {
        onTextDelta: () => {
          controller.abort(reason);
        },
      }),
      controller.signal,
    );
    await expect(running).rejects.toBe(reason);
    await expect.poll(() => server?.closedConnections).toBe(1);
    expect(server?.requests).toHaveLength(1);
  });

  it("an abort during the backoff ends at once", async () => {
    const controller = new AbortController();
    const client = await clientFor(
      (_req, res) => {
        res.writeHead(429, { "retry-after": "30" });
        res.end();
        controller.abort(new Error("stop"));
      },
      { retryMaxDelayMs: 60_000 },
    );
    await expect(client.complete(request(), controller.signal)).rejects.toThrow("stop");
    expect(server?.requests).toHaveLength(1);
  });

  it("reports an error event in the stream and a stream cut short", async () => {
    const client = await clientFor(
      (_req, res, attempt) => {
        openStream(res);
        if (attempt === 1) send(res, { error: { message: "CUDA out of memory" } });
        else send(res, textChunk("half a rep"));
        res.end();
      },
      { maxRetries: 0 },
    );
    const errored = await client.complete(request(), never());
    expect(!errored.ok && errored.failure.message).toContain("CUDA out of memory");
    const cut = await client.complete(request(), never());
    expect(!cut.ok && cut.failure.message).toContain("stream ended before the reply was complete");
  });

  it("accepts a server that ignores stream: true", async () => {
    const client = await clientFor((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: null,
                tool_calls: [
                  {
                    id: "c1",
                    type: "function",
                    function: { name: "bash", arguments: '{"command":"ls"}' },
                  },
                ],
              },
              finish_reason: "tool_calls",
            },
          ],
          usage: { prompt_tokens: 3, completion_tokens: 2 },
        }),
      );
    });
    const result = await client.complete(request(), never());
    expect(result.ok && result.turn.message.toolCalls).toEqual([
      { id: "c1", name: "bash", arguments: '{"command":"ls"}' },
    ]);
  });

  it("a refused connection is unavailable", async () => {
    const probe = await startChatServer(() => {});
    const baseUrl = probe.baseUrl;
    await probe.close();
    const client = createOpenAiCompatibleClient({
      config: {
        ...DEFAULT_OPENAI_COMPATIBLE_CONFIG,
        baseUrl,
        model: "m",
        maxRetries: 1,
        retryBaseDelayMs: 1,
      },
      logger,
    });
    const result = await client.complete(request(), never());
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.failure.kind).toBe("unavailable");
    expect(result.failure.message).toContain("ECONNREFUSED");
  });

  it("an error of the consumer propagates as is", async () => {
    const client = await clientFor((_req, res) => {
      openStream(res);
      send(res, textChunk("a"));
      send(res, textChunk("b", "stop"));
      send(res, "[DONE]");
      res.end();
    });
    const lost = new TypeError("lease lost");
    const running = client.complete(
      request([], { onTextDelta: () => Promise.reject(lost) }),
      never(),
    );
    await expect(running).rejects.toBe(lost);
    expect(server?.requests).toHaveLength(1);
  });
});
