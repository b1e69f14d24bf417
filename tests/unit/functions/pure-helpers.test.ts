import { describe, expect, test } from "vitest";
import { canonicalJson, requestHash } from "../../../functions/idempotency/request-hash.ts";
import { parseLastEventId } from "../../../functions/run-events/last-event-id.ts";
import { runEventFrame } from "../../../functions/run-events/sse-frame.ts";
import {
  decodeThreadCursor,
  encodeThreadCursor,
} from "../../../functions/threads/thread-cursor.ts";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import { bearerToken } from "../../../shared/http/bearer-token.ts";

describe("thread cursor", () => {
  test("round-trips with microsecond precision and is opaque base64url", () => {
    const cursor = { createdAt: "2026-01-02T03:04:05.123456Z", threadId: crypto.randomUUID() };
    const encoded = encodeThreadCursor(cursor);
    expect(encoded).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeThreadCursor(encoded)).toEqual(cursor);
  });

  test.each(["", "garbage", btoa("{}"), btoa(JSON.stringify({ t: "yesterday", id: "x" }))])(
    "refuses %j as a 400",
    (raw) => {
      expect(() => decodeThreadCursor(raw)).toThrow(WorkcellError);
      try {
        decodeThreadCursor(raw);
      } catch (error) {
        expect((error as WorkcellError).code).toBe("invalid_request");
      }
    },
  );
});

describe("request hash", () => {
  test("ignores key order and undefined fields, not values", async () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: [3, { f: 4, e: 5 }] } })).toBe(
      '{"a":{"c":[3,{"e":5,"f":4}],"d":2},"b":1}',
    );
    expect(requestHash({ a: 1, b: 2, c: undefined })).toBe(requestHash({ b: 2, a: 1 }));
    expect(requestHash({ a: 1 })).not.toBe(requestHash({ a: 2 }));
    expect(requestHash({ a: 1 })).toMatch(/^[0-9a-f]{64}$/);
    // Hashes stored before stay comparable: SHA-256 (hex) of the canonical JSON's UTF-8
    // bytes, the known answer computed independently (Python's hashlib).
    expect(requestHash({ a: "é" })).toBe(
      "b3a092a6af48807fa9482b2ee140105575daa26d5b24b3c0e60a7e2dee6683b1",
    );
  });
});

describe("Last-Event-ID", () => {
  test("absent or empty: from the start; digits: that seq; anything else: 400", () => {
    expect(parseLastEventId(undefined)).toBe(0);
    expect(parseLastEventId(" ")).toBe(0);
    expect(parseLastEventId("42")).toBe(42);
    for (const bad of ["-1", "1e3", "0x10", "2147483648", "12345678901", "4 2"]) {
      expect(() => parseLastEventId(bad), bad).toThrow(WorkcellError);
    }
  });
});

describe("SSE frames", () => {
  test("data is one JSON line even when the text has newlines; type cannot break the frame", () => {
    const frame = runEventFrame({
      runId: "8b0e7f3a-5a52-4a4b-9d47-1c0f8c7d9e10",
      uid: "alice",
      seq: 7,
      prevSeq: 6,
      type: "message.delta\nid: 999",
      data: { text: "a\nb\r\n\ndata: forged" },
      createdAt: new Date("2026-01-01T00:00:00Z"),
    });
    const lines = frame.split("\n");
    expect(frame.endsWith("\n\n")).toBe(true);
    expect(lines.filter((l) => l.startsWith("id: "))).toEqual(["id: 7"]);
    expect(lines.filter((l) => l.startsWith("data: "))).toHaveLength(1);
    const data = JSON.parse(lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "");
    expect(data).toMatchObject({ seq: 7, data: { text: "a\nb\r\n\ndata: forged" } });
  });
});

describe("bearer token", () => {
  test("accepts `Bearer <jwt>` in any case; refuses other schemes, spaces inside, huge headers", () => {
    expect(bearerToken("Bearer a.b.c")).toBe("a.b.c");
    expect(bearerToken("bearer   a.b.c ")).toBe("a.b.c");
    expect(bearerToken("Basic a.b.c")).toBeUndefined();
    expect(bearerToken("Bearer a b")).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
    expect(bearerToken(`Bearer ${"a".repeat(20_000)}`)).toBeUndefined();
  });
});
