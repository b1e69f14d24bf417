import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  MAX_QUEUE_MESSAGE_BYTES,
  parseQueueMessage,
  type QueueMessage,
  serializeQueueMessage,
} from "../../../shared/contracts/index.ts";
import { queueDisposition } from "../../../shared/errors/index.ts";

const RUN_ID = "0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";

describe("queue messages", () => {
  test("parses run.dispatch and skills.refresh from strings and values", () => {
    const dispatch: QueueMessage = { type: "run.dispatch", run_id: RUN_ID };
    const refresh: QueueMessage = { type: "skills.refresh", uid: "oidc:tenant/user" };
    for (const message of [dispatch, refresh]) {
      expect(parseQueueMessage(JSON.stringify(message))).toEqual({ ok: true, value: message });
      expect(parseQueueMessage(message)).toEqual({ ok: true, value: message });
    }
  });

  test("drops unknown fields from a newer producer instead of failing", () => {
    const result = parseQueueMessage({ type: "run.dispatch", run_id: RUN_ID, priority: 5 });
    expect(result).toEqual({ ok: true, value: { type: "run.dispatch", run_id: RUN_ID } });
  });

  test.each([
    ["{"],
    [""],
    ["null"],
    ["42"],
    ['"run.dispatch"'],
    ['{"type":"run.dispatch"}'],
    ['{"type":"run.dispatch","run_id":"r1"}'],
    ['{"type":"skills.refresh","uid":""}'],
    ['{"type":"run.explode","run_id":"0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d"}'],
    ['{"run_id":"0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d"}'],
  ])("rejects %j as a dead-letter value", (raw) => {
    const result = parseQueueMessage(raw);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe("invalid_request");
    expect(queueDisposition(result.error.code)).toBe("dead_letter");
  });

  test("rejects a body larger than SQS allows without parsing it", () => {
    const huge = JSON.stringify({
      type: "skills.refresh",
      uid: "x".repeat(MAX_QUEUE_MESSAGE_BYTES),
    });
    const result = parseQueueMessage(huge);
    expect(result.ok ? "" : result.error.message).toContain(String(MAX_QUEUE_MESSAGE_BYTES));
  });

  test("never throws, whatever arrives", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.jsonValue(), fc.anything()), (raw) => {
        const result = parseQueueMessage(raw);
        expect(typeof result.ok).toBe("boolean");
      }),
    );
  });

  test("serialize round-trips and refuses an invalid message", () => {
    const message: QueueMessage = { type: "run.dispatch", run_id: RUN_ID };
    expect(parseQueueMessage(serializeQueueMessage(message))).toEqual({ ok: true, value: message });
    expect(() => serializeQueueMessage({ type: "run.dispatch", run_id: "nope" })).toThrow();
  });
});
