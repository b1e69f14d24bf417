import { describe, expect, test } from "vitest";
import { runOutcome } from "../../../sdk/cli/run-outcome.ts";
import type { RunData, RunEvent } from "../../../sdk/src/index.ts";

// What `workcell run` prints and exits with (issue 40): a shell-model run's command exit
// code is the CLI's; a failed or timed-out run is non-zero with its reason; cancel is 130.

const run = (status: RunData["status"], error?: RunData["error"]): RunData => ({
  run_id: "00000000-0000-4000-8000-000000000001",
  thread_id: "00000000-0000-4000-8000-000000000002",
  parent_run_id: null,
  runtime_scope_id: "00000000-0000-4000-8000-000000000002",
  status,
  cancel_requested: status === "cancelled",
  created_at: "2026-12-04T20:00:00.000Z",
  ...(error === undefined ? {} : { error }),
});
const completed = (data: Extract<RunEvent, { type: "run.completed" }>["data"]): RunEvent => ({
  seq: 5,
  run_id: "00000000-0000-4000-8000-000000000001",
  created_at: "2026-12-04T20:00:01.000Z",
  type: "run.completed",
  data,
});

describe("runOutcome", () => {
  test("a shell command's exit code becomes the CLI's, and a failure never reads succeeded", () => {
    expect(runOutcome(run("succeeded"), completed({ status: "succeeded", exit_code: 3 }))).toEqual({
      line: "command failed (exit 3)",
      exitCode: 3,
    });
    expect(runOutcome(run("succeeded"), completed({ status: "succeeded", exit_code: 0 }))).toEqual({
      line: "succeeded",
      exitCode: 0,
    });
  });

  test("a model run (no exit code in run.completed) is judged by its status", () => {
    expect(runOutcome(run("succeeded"), completed({ status: "succeeded" }))).toEqual({
      line: "succeeded",
      exitCode: 0,
    });
  });

  test("timed out: the run failed with its reason, exit 1; cancelled: 130", () => {
    const error = { code: "command_timeout", message: "The 'bash' call hit its time limit" };
    expect(runOutcome(run("failed", error), completed({ status: "failed", error }))).toEqual({
      line: "failed: command_timeout The 'bash' call hit its time limit",
      exitCode: 1,
    });
    expect(runOutcome(run("cancelled"), completed({ status: "cancelled" }))).toEqual({
      line: "cancelled",
      exitCode: 130,
    });
  });

  test("a stream that ended before the run did is not a success", () => {
    expect(runOutcome(run("running"), undefined)).toEqual({
      line: "running (not finished)",
      exitCode: 1,
    });
  });
});
