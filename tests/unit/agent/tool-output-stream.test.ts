import { afterEach, beforeEach, expect, it, vi } from "vitest";
import type { AgentEvent } from "../../../agent-host/runs/agent/index.ts";
import {
  createToolOutputBudget,
  createToolOutputStream,
  type ToolOutputLimits,
} from "../../../agent-host/runs/agent/tool-output-stream.ts";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const LIMITS: ToolOutputLimits = { flushMs: 100, maxEventBytes: 16, maxRunBytes: 64 };

function stream(limits: ToolOutputLimits = LIMITS, emit?: (e: AgentEvent) => Promise<void>) {
  const events: AgentEvent[] = [];
  const budget = createToolOutputBudget(limits);
  const out = createToolOutputStream({
    toolCallId: "call_1",
    emit:
      emit ??
      (async (event) => {
        events.push(event);
      }),
    limits,
    budget,
  });
  const texts = () =>
    events.map((e) => (e.type === "tool.output" ? `${e.data.stream}:${e.data.text}` : e.type));
  return { out, events, budget, texts };
}

it("coalesces chunks that arrive within flushMs into one event per stream, in arrival order", async () => {
  const { out, texts } = stream();
  out.push("stdout", Buffer.from("a"));
  out.push("stdout", Buffer.from("b"));
  out.push("stderr", Buffer.from("E"));
  out.push("stdout", Buffer.from("c"));
  expect(texts()).toEqual([]);
  await vi.advanceTimersByTimeAsync(100);
  expect(texts()).toEqual(["stdout:ab", "stderr:E", "stdout:c"]);
  out.push("stdout", Buffer.from("later"));
  await out.close();
  expect(texts()).toEqual(["stdout:ab", "stderr:E", "stdout:c", "stdout:later"]);
});

it("appends output printed a line at a time as separate events, each once its flush delay passed", async () => {
  const { out, texts } = stream({ ...LIMITS, maxRunBytes: 1024 });
  for (const line of ["1\n", "2\n", "3\n"]) {
    out.push("stdout", Buffer.from(line));
    await vi.advanceTimersByTimeAsync(1000);
  }
  expect(texts()).toEqual(["stdout:1\n", "stdout:2\n", "stdout:3\n"]);
  await out.close();
});

it("splits a large chunk into events of at most maxEventBytes without breaking a UTF-8 character", async () => {
  const { out, events } = stream({ ...LIMITS, maxRunBytes: 1024 });
  const text = "é".repeat(20); // 40 bytes; 16-byte events hold 8 characters
  const bytes = Buffer.from(text);
  // Split inside a character on purpose: the decoder must carry the half over.
  out.push("stdout", bytes.subarray(0, 3));
  out.push("stdout", bytes.subarray(3));
  await out.close();
  const pieces = events.map((e) => (e.type === "tool.output" ? e.data.text : ""));
  expect(pieces.join("")).toBe(text);
  for (const piece of pieces) expect(Buffer.byteLength(piece)).toBeLessThanOrEqual(16);
  expect(pieces.every((p) => !p.includes("\uFFFD"))).toBe(true);
});

it("cuts the run's output at its bound with one marker event, then appends nothing more", async () => {
  const { out, events, budget } = stream();
  out.push("stdout", Buffer.from("x".repeat(100)));
  await vi.advanceTimersByTimeAsync(100);
  out.push("stderr", Buffer.from("more"));
  await out.close();
  const data = events.map((e) => (e.type === "tool.output" ? e.data : undefined));
  const kept = data.filter((d) => d?.truncated !== true).map((d) => d?.text ?? "");
  expect(kept.join("")).toBe("x".repeat(64));
  expect(data.at(-1)).toMatchObject({ truncated: true, stream: "stdout" });
  expect(data.at(-1)?.text).toContain("64-byte bound");
  expect(data.filter((d) => d?.truncated === true)).toHaveLength(1);
  expect(budget.exhausted).toBe(true);

  // A later call of the same run shares the spent budget: nothing at all.
  const later = createToolOutputStream({
    toolCallId: "call_2",
    emit: async (e) => void events.push(e),
    limits: LIMITS,
    budget,
  });
  const before = events.length;
  later.push("stdout", Buffer.from("ignored"));
  await later.close();
  expect(events.length).toBe(before);
});

it("close rejects with the first failed append and appends nothing after it", async () => {
  const lost = new Error("lease lost");
  let calls = 0;
  const { out } = stream(LIMITS, async () => {
    calls++;
    throw lost;
  });
  out.push("stdout", Buffer.from("a"));
  await vi.advanceTimersByTimeAsync(100);
  out.push("stdout", Buffer.from("b"));
  await expect(out.close()).rejects.toBe(lost);
  expect(calls).toBe(1);
});
