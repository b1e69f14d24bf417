import { describe, expect, test } from "vitest";
import type { RunEvent } from "../../../web/src/api/types.ts";
import { applyRunEvent, initialRunState } from "../../../web/src/chat/run-state.ts";

// The chat's view of a run's approvals (issue #36): the waiting call is a part with its
// arguments, the run reads awaiting_approval, and the decision updates the same part.

const RUN = "00000000-0000-4000-8000-000000000001";
const APPROVAL = "00000000-0000-4000-8000-000000000002";
const event = (seq: number, type: string, data: Record<string, unknown>) =>
  ({ seq, run_id: RUN, created_at: "2026-01-01T00:00:00.000Z", type, data }) as RunEvent;

describe("approvals in the chat", () => {
  test("requested: a pending part with the arguments; resolved: the same part decided", () => {
    let state = initialRunState("running");
    state = applyRunEvent(
      state,
      event(1, "approval.requested", {
        approval_id: APPROVAL,
        run_id: RUN,
        kind: "tool",
        status: "pending",
        tool: "bash",
        arguments: { command: "rm -rf outputs" },
        requested_at: "2026-01-01T00:00:00.000Z",
        expires_at: "2026-01-02T00:00:00.000Z",
      }),
    );
    expect(state.status).toBe("awaiting_approval");
    expect(state.parts).toEqual([
      {
        kind: "approval",
        approvalId: APPROVAL,
        tool: "bash",
        arguments: { command: "rm -rf outputs" },
        status: "pending",
        expiresAt: "2026-01-02T00:00:00.000Z",
      },
    ]);
    state = applyRunEvent(
      state,
      event(2, "approval.resolved", {
        approval_id: APPROVAL,
        status: "denied",
        decided_by: "ada",
        note: "not that",
      }),
    );
    expect(state.status).toBe("pending");
    expect(state.parts[0]).toMatchObject({ status: "denied", decidedBy: "ada", note: "not that" });
    // A replayed event changes nothing (the view is a pure fold over seq).
    expect(applyRunEvent(state, event(2, "approval.resolved", { approval_id: APPROVAL }))).toBe(
      state,
    );
  });

  test("a network approval: the part shows its host and port, the run keeps running", () => {
    let state = initialRunState("running");
    state = applyRunEvent(
      state,
      event(1, "approval.requested", {
        approval_id: APPROVAL,
        run_id: RUN,
        kind: "network",
        status: "pending",
        host: "api.example.com",
        port: 443,
        requested_at: "2026-01-01T00:00:00.000Z",
        expires_at: "2026-01-02T00:00:00.000Z",
      }),
    );
    expect(state.status).toBe("running");
    expect(state.parts[0]).toMatchObject({
      kind: "approval",
      network: { host: "api.example.com", port: 443 },
      status: "pending",
    });
    state = applyRunEvent(
      state,
      event(2, "approval.resolved", {
        approval_id: APPROVAL,
        status: "approved",
        decided_by: "ada",
      }),
    );
    expect(state.status).toBe("running");
    expect(state.parts[0]).toMatchObject({ status: "approved", decidedBy: "ada" });
  });
});
