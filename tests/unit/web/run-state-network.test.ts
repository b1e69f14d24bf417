import { describe, expect, test } from "vitest";
import type { RunEvent } from "../../../web/src/api/types.ts";
import { applyRunEvent, initialRunState } from "../../../web/src/chat/run-state.ts";

// The chat's view of a run's `network.request` events (issue #34): each connection is a
// part in order, refused ones with their reason, so a user sees which host was refused.

const RUN = "00000000-0000-4000-8000-000000000001";
const event = (seq: number, data: Record<string, unknown>) =>
  ({
    seq,
    run_id: RUN,
    created_at: "2026-01-01T00:00:00.000Z",
    type: "network.request",
    data: {
      port: 443,
      address: null,
      protocol: "connect",
      reason: null,
      bytes_up: 0,
      bytes_down: 0,
      duration_ms: 1,
      started_at: "2026-01-01T00:00:00.000Z",
      ...data,
    },
  }) as unknown as RunEvent;

describe("network.request in the chat", () => {
  test("allowed and refused connections become parts, in order, refused ones with the reason", () => {
    let state = initialRunState("running");
    state = applyRunEvent(state, event(1, { host: "pypi.org", decision: "allowed" }));
    state = applyRunEvent(
      state,
      event(2, { host: "evil.test", decision: "denied", reason: "not_in_policy" }),
    );
    expect(state.parts).toEqual([
      { kind: "network", host: "pypi.org", port: 443, decision: "allowed", reason: "" },
      {
        kind: "network",
        host: "evil.test",
        port: 443,
        decision: "denied",
        reason: "not_in_policy",
      },
    ]);
    // A replayed event changes nothing.
    expect(applyRunEvent(state, event(2, { host: "x", decision: "allowed" }))).toBe(state);
  });
});
