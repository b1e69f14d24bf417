import { describe, expect, it } from "vitest";
import {
  MAX_SSE_EVENT_CHARS,
  readSseEvents,
  SseTooLargeError,
} from "../../../agent-host/runs/agent/sse-events.ts";

function body(...chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) {
        controller.enqueue(typeof chunk === "string" ? new TextEncoder().encode(chunk) : chunk);
      }
      controller.close();
    },
  });
}

async function collect(stream: ReadableStream<Uint8Array>) {
  const out = [];
  for await (const event of readSseEvents(stream)) out.push(event);
  return out;
}

describe("readSseEvents", () => {
  it("parses events, comments and multi-line data", async () => {
    const events = await collect(
      body(": keep-alive\n\ndata: one\n\nevent: error\ndata: a\ndata: b\n\ndata:no-space\n\n"),
    );
    expect(events).toEqual([
      { event: "message", data: "one" },
      { event: "error", data: "a\nb" },
      { event: "message", data: "no-space" },
    ]);
  });

  it("handles CRLF, CR and LF, even split across chunks", async () => {
    const events = await collect(body("data: a\r", "\n\r", "\ndata: b\r\rdata: c\n", "\n"));
    expect(events.map((e) => e.data)).toEqual(["a", "b", "c"]);
  });

  it("splits anywhere, including inside a multi-byte character", async () => {
    const text = 'data: {"content":"héllo ☃"}\n\ndata: [DONE]\n\n';
    const bytes = new TextEncoder().encode(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const events = await collect(body(bytes.subarray(0, cut), bytes.subarray(cut)));
      expect(events.map((e) => e.data)).toEqual(['{"content":"héllo ☃"}', "[DONE]"]);
    }
  });

  it("dispatches data left when the body ends without a blank line", async () => {
    expect(await collect(body("data: last"))).toEqual([{ event: "message", data: "last" }]);
  });

  it("refuses an event larger than the bound instead of buffering it", async () => {
    const huge = `data: ${"x".repeat(MAX_SSE_EVENT_CHARS + 1)}`;
    await expect(collect(body(huge))).rejects.toBeInstanceOf(SseTooLargeError);
  });
});
