import { describe, expect, test } from "vitest";
import {
  isTerminalRunEvent,
  isTerminalRunStatus,
  MAX_AGENT_STEPS,
  MAX_RUN_INPUT_CHARS,
  RUN_EVENT_TYPES,
  RUN_STATUSES,
  runCancelRequestSchema,
  runChangeListSchema,
  runEventSchema,
  runSchema,
  runSubmitRequestSchema,
  runSubmitResponseSchema,
  threadRunSubmitRequestSchema,
} from "../../../shared/contracts/index.ts";

const ID = "0f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";
const ID2 = "1f8fd04e-1c8b-4c4b-9a4e-6f2d3b1a0c9d";
const AT = "2025-01-31T12:00:00.123+02:00";

const run = {
  run_id: ID,
  thread_id: ID2,
  parent_run_id: null,
  runtime_scope_id: ID2,
  status: "pending",
  cancel_requested: false,
  created_at: AT,
};

describe("run submit", () => {
  test("thread run: input with optional agent options", () => {
    expect(threadRunSubmitRequestSchema.parse({ input: "hi" })).toEqual({ input: "hi" });
    const withAgent = { input: "hi", agent: { model: "m-1", max_steps: 3, file_view: "workdir" } };
    expect(threadRunSubmitRequestSchema.parse(withAgent)).toEqual(withAgent);
  });

  test("thread run: rejects empty or oversized input, unknown fields, bad agent options", () => {
    const bad = [
      {},
      { input: "" },
      { input: "x".repeat(MAX_RUN_INPUT_CHARS + 1) },
      { input: "hi", project_id: ID },
      { input: "hi", agent: { unknown: true } },
      { input: "hi", agent: { max_steps: 0 } },
      { input: "hi", agent: { max_steps: MAX_AGENT_STEPS + 1 } },
      { input: "hi", agent: { max_steps: 1.5 } },
      { input: "hi", agent: { file_view: "home" } },
      { input: "hi", agent: { file_view: "" } },
    ];
    for (const body of bad)
      expect(threadRunSubmitRequestSchema.safeParse(body).success).toBe(false);
    expect(
      threadRunSubmitRequestSchema.safeParse({ input: "x".repeat(MAX_RUN_INPUT_CHARS) }).success,
    ).toBe(true);
  });

  test("POST /v1/runs: input plus optional project_id, title and agent; strict", () => {
    const body = { input: "hi", project_id: ID, title: "T", agent: {} };
    expect(runSubmitRequestSchema.parse(body)).toEqual(body);
    expect(runSubmitRequestSchema.safeParse({ input: "hi", workdir_path: "x" }).success).toBe(
      false,
    );
    expect(runSubmitRequestSchema.safeParse({ input: "hi", project_id: "p1" }).success).toBe(false);
  });

  test("response carries the run and the created thread", () => {
    const thread = {
      thread_id: ID2,
      project_id: ID,
      workdir_path: `projects/${ID}`,
      parent_thread_id: null,
      title: null,
      status: "active",
      created_at: AT,
    };
    expect(runSubmitResponseSchema.parse({ run, thread })).toEqual({ run, thread });
    expect(runSubmitResponseSchema.safeParse({ run }).success).toBe(false);
  });
});

describe("run resource", () => {
  test("accepts a pending run and a failed one with its error", () => {
    expect(runSchema.parse(run)).toEqual(run);
    const failed = {
      ...run,
      status: "failed",
      error: { code: "sandbox_identity_mismatch", message: "x" },
      started_at: AT,
      finished_at: AT,
    };
    expect(runSchema.parse(failed)).toEqual(failed);
  });

  test("rejects unknown statuses and missing fields", () => {
    expect(runSchema.safeParse({ ...run, status: "queued" }).success).toBe(false);
    const { cancel_requested: _, ...missing } = run;
    expect(runSchema.safeParse(missing).success).toBe(false);
  });

  test("terminal statuses", () => {
    expect(RUN_STATUSES.filter(isTerminalRunStatus)).toEqual(["succeeded", "failed", "cancelled"]);
  });

  test("cancel takes no fields", () => {
    expect(runCancelRequestSchema.parse({})).toEqual({});
    expect(runCancelRequestSchema.safeParse({ force: true }).success).toBe(false);
  });

  test("changes list", () => {
    const changes = {
      items: [
        { path: "a.txt", change: "added", size: 3 },
        { path: "b.txt", change: "deleted", size: null },
      ],
      truncated: false,
      batches: [
        {
          batch_id: ID,
          run_id: ID,
          seq: 0,
          tool: "bash",
          command: "echo a > a.txt; rm b.txt",
          started_at: AT,
          finished_at: AT,
          item_count: 2,
          truncated: false,
          pending_repair: false,
        },
      ],
    };
    expect(runChangeListSchema.parse(changes)).toEqual(changes);
    const bad = { ...changes, items: [{ path: "a", change: "renamed", size: 1 }] };
    expect(runChangeListSchema.safeParse(bad).success).toBe(false);
    // `truncated` is never left out: a bounded list must say so.
    expect(runChangeListSchema.safeParse({ items: [], batches: [] }).success).toBe(false);
  });
});

describe("run events", () => {
  const base = { seq: 1, run_id: ID, created_at: AT };

  test("parses each event type and keeps its data", () => {
    const events = [
      { ...base, type: "run.status", data: { status: "running" } },
      { ...base, type: "message.delta", data: { text: "Hel" } },
      { ...base, type: "message.completed", data: { text: "Hello" } },
      {
        ...base,
        type: "tool.started",
        data: { tool_call_id: "c1", name: "bash", input: { cmd: "ls" } },
      },
      {
        ...base,
        type: "tool.output",
        data: { tool_call_id: "c1", stream: "stdout", text: "a\n" },
      },
      {
        ...base,
        type: "tool.output",
        data: { tool_call_id: "c1", stream: "stderr", text: "[cut]", truncated: true },
      },
      {
        ...base,
        type: "tool.completed",
        data: { tool_call_id: "c1", is_error: false, output: "a" },
      },
      {
        ...base,
        type: "subagent.started",
        data: { tool_call_id: "c2", run_id: ID, thread_id: ID },
      },
      {
        ...base,
        type: "subagent.completed",
        data: { tool_call_id: "c2", run_id: ID, status: "cancelled" },
      },
      {
        ...base,
        type: "network.request",
        data: {
          host: "pypi.org",
          port: 443,
          address: "151.101.0.223",
          protocol: "connect",
          decision: "allowed",
          reason: null,
          bytes_up: 512,
          bytes_down: 40960,
          duration_ms: 120,
          started_at: "2026-01-01T00:00:00.000Z",
        },
      },
      {
        ...base,
        type: "approval.requested",
        data: {
          approval_id: ID,
          run_id: ID,
          kind: "tool",
          status: "pending",
          tool: "bash",
          arguments: { command: "rm -rf outputs" },
          requested_at: "2026-01-01T00:00:00.000Z",
          expires_at: "2026-01-02T00:00:00.000Z",
        },
      },
      {
        ...base,
        type: "approval.resolved",
        data: { approval_id: ID, status: "denied", decided_by: "alice", note: "no" },
      },
      {
        ...base,
        type: "checkpoint.created",
        data: {
          checkpoint_id: "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d",
          files: 1000,
          bytes: 104857600,
          mode: "reflink",
        },
      },
      { ...base, type: "run.completed", data: { status: "succeeded" } },
    ];
    expect([...new Set(events.map((e) => e.type))].sort()).toEqual([...RUN_EVENT_TYPES].sort());
    for (const event of events) expect(runEventSchema.parse(event)).toEqual(event);
  });

  test("only run.completed is terminal", () => {
    const done = runEventSchema.parse({
      ...base,
      type: "run.completed",
      data: { status: "failed" },
    });
    const status = runEventSchema.parse({
      ...base,
      type: "run.status",
      data: { status: "running" },
    });
    expect(isTerminalRunEvent(done)).toBe(true);
    expect(isTerminalRunEvent(status)).toBe(false);
  });

  test("rejects unknown types, bad sequences and mismatched data", () => {
    const bad = [
      { ...base, type: "run.exploded", data: {} },
      { ...base, seq: 0, type: "message.delta", data: { text: "x" } },
      { ...base, seq: 1.5, type: "message.delta", data: { text: "x" } },
      { ...base, type: "message.delta", data: { status: "running" } },
      { ...base, type: "run.completed", data: { status: "running" } },
    ];
    for (const event of bad) expect(runEventSchema.safeParse(event).success).toBe(false);
  });
});
