import { describe, expect, it } from "vitest";
import { createCompletionAccumulator } from "../../../agent-host/runs/agent/completion-accumulator.ts";
import { createDeltaBuffer } from "../../../agent-host/runs/agent/delta-buffer.ts";
import { buildSystemPrompt } from "../../../agent-host/runs/agent/index.ts";
import { parseRetryAfterMs, retryDelayMs } from "../../../agent-host/runs/agent/retry-delay.ts";
import { capToolOutput, truncateUtf8 } from "../../../agent-host/runs/agent/truncate-utf8.ts";
import { WORKDIR } from "./loop-harness.ts";

describe("completion accumulator", () => {
  it("joins tool calls split over chunks by index", () => {
    const acc = createCompletionAccumulator();
    acc.add({ choices: [{ index: 0, delta: { content: "Let me " } }] });
    acc.add({ choices: [{ delta: { content: "look." } }] });
    acc.add({
      choices: [
        {
          delta: {
            tool_calls: [
              { index: 0, id: "a", function: { name: "read_file", arguments: '{"pa' } },
              { index: 1, id: "b", function: { name: "bash", arguments: "" } },
            ],
          },
        },
      ],
    });
    acc.add({
      choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'th":"x"}' } }] } }],
    });
    acc.add({ choices: [{ delta: {}, finish_reason: "tool_calls" }] });
    acc.add({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 3 } });
    expect(acc.result()).toEqual({
      message: {
        role: "assistant",
        content: "Let me look.",
        toolCalls: [
          { id: "a", name: "read_file", arguments: '{"path":"x"}' },
          { id: "b", name: "bash", arguments: "{}" },
        ],
      },
      finishReason: "tool_calls",
      usage: { inputTokens: 10, outputTokens: 3 },
    });
  });

  it("copes with servers that omit index and id", () => {
    const acc = createCompletionAccumulator();
    acc.add({
      choices: [{ delta: { tool_calls: [{ function: { name: "bash", arguments: "{}" } }] } }],
    });
    acc.add({
      choices: [{ delta: { tool_calls: [{ id: "z", function: { name: "list_dir" } }] } }],
    });
    acc.add({ choices: [{ finish_reason: "stop" }] });
    const { message, finishReason } = acc.result();
    expect(message.toolCalls.map((c) => [c.id, c.name])).toEqual([
      ["call_0", "bash"],
      ["z", "list_dir"],
    ]);
    expect(finishReason).toBe("stop");
  });
});

describe("delta buffer", () => {
  it("flushes by size, by age and at the end", async () => {
    let now = 0;
    const out: string[] = [];
    const buffer = createDeltaBuffer({
      emitText: async (text) => void out.push(text),
      flushChars: 5,
      flushMs: 100,
      nowMs: () => now,
    });
    await buffer.push("ab");
    await buffer.push("cde");
    await buffer.push("f");
    now = 150;
    await buffer.push("g");
    await buffer.push("h");
    await buffer.flush();
    await buffer.flush();
    expect(out).toEqual(["abcde", "fg", "h"]);
  });
});

describe("retry delay", () => {
  it("uses Retry-After up to the cap, else full-jitter backoff", () => {
    const base = { baseDelayMs: 100, maxDelayMs: 1000, random: () => 0.5 };
    expect(retryDelayMs({ ...base, attempt: 0, retryAfterMs: 300 })).toBe(300);
    expect(retryDelayMs({ ...base, attempt: 0, retryAfterMs: 60_000 })).toBe(1000);
    expect(retryDelayMs({ ...base, attempt: 0, retryAfterMs: undefined })).toBe(50);
    expect(retryDelayMs({ ...base, attempt: 3, retryAfterMs: undefined })).toBe(400);
    expect(retryDelayMs({ ...base, attempt: 10, retryAfterMs: undefined })).toBe(500);
  });

  it("parses Retry-After as seconds or a date", () => {
    const now = Date.parse("2025-01-01T00:00:00Z");
    expect(parseRetryAfterMs("2", now)).toBe(2000);
    expect(parseRetryAfterMs("Wed, 01 Jan 2025 00:00:05 GMT", now)).toBe(5000);
    expect(parseRetryAfterMs("soon", now)).toBeUndefined();
    expect(parseRetryAfterMs(null, now)).toBeUndefined();
  });
});

describe("truncateUtf8", () => {
  it("never cuts a character in half", () => {
    expect(truncateUtf8("a☃b", 2)).toEqual({ text: "a", droppedBytes: 4 });
    expect(truncateUtf8("a😀", 4)).toEqual({ text: "a", droppedBytes: 4 });
    expect(truncateUtf8("abc", 3)).toEqual({ text: "abc", droppedBytes: 0 });
    expect(capToolOutput("abcdefgh", 4)).toBe(
      "abc\n[output truncated: 4 bytes omitted here; narrow the command or read the file in parts]\nh",
    );
    expect(capToolOutput("abc", 3)).toBe("abc");
  });
});

describe("buildSystemPrompt", () => {
  it("states the Workdir, the write rule and the skills", () => {
    const prompt = buildSystemPrompt({ workdirPath: WORKDIR, skills: ["pdf"] });
    expect(prompt).toContain(`Your Workdir is /home/gem/user-data/${WORKDIR}.`);
    expect(prompt).toContain("outside your Workdir unless the user asks");
    expect(prompt).toContain("read-only under /home/gem/skills");
    expect(prompt).toContain("/home/gem/skills/pdf");
  });

  it("tells the agent what the workdir file view lets it write", () => {
    const prompt = buildSystemPrompt({ workdirPath: WORKDIR, fileView: "workdir" });
    expect(prompt).toContain("read-only in this conversation");
    expect(prompt).toContain('only your Workdir is writable (file view "workdir")');
    expect(prompt).not.toContain("unless the user asks");
    expect(buildSystemPrompt({ workdirPath: WORKDIR, fileView: "workspace" })).toBe(
      buildSystemPrompt({ workdirPath: WORKDIR }),
    );
  });

  it("refuses a bad Workdir rather than point the agent elsewhere", () => {
    expect(() => buildSystemPrompt({ workdirPath: "../etc" })).toThrow();
  });
});
