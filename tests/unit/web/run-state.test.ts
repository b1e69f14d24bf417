import { describe, expect, test } from "vitest";
import type { RunEvent } from "../../../web/src/api/types.ts";
import {
  applyRunEvent,
  displayStatus,
  initialRunState,
  type RunState,
  repeatsToolResult,
} from "../../../web/src/chat/run-state.ts";

// The console's reading of a run's events (issue 40): a failed command never reads as a
// green "succeeded", a cancelled command keeps what it printed, and the shell model's
// reply (its command's result) is not shown a second time under the tool's output.

const RUN = "00000000-0000-4000-8000-000000000001";
type Step = readonly [RunEvent["type"], Readonly<Record<string, unknown>>];
function fold(events: readonly Step[]): RunState {
  return events.reduce(
    (state, [type, data], i) =>
      applyRunEvent(state, {
        seq: i + 1,
        run_id: RUN,
        created_at: "2026-12-04T20:00:00.000Z",
        type,
        data,
      } as RunEvent),
    initialRunState("pending"),
  );
}
const started = ["tool.started", { tool_call_id: "shell_1", name: "bash", input: {} }] as const;
const printed = (text: string) =>
  ["tool.output", { tool_call_id: "shell_1", stream: "stdout", text }] as const;

describe("run state", () => {
  test("a shell run whose command exited 3 reads 'command failed (exit 3)', in the failed tone", () => {
    const state = fold([
      started,
      printed("partial\n"),
      [
        "tool.completed",
        {
          tool_call_id: "shell_1",
          is_error: true,
          exit_code: 3,
          output: { text: "partial\n[exit code 3]" },
        },
      ],
      ["message.delta", { text: "partial\n[exit code 3]" }],
      ["run.completed", { status: "succeeded", exit_code: 3 }],
    ]);
    expect(displayStatus(state)).toEqual({ label: "command failed (exit 3)", tone: "failed" });
    expect(state.parts[0]).toMatchObject({ kind: "tool", exitCode: 3, output: "partial\n" });
    // The reply repeats the tool's result: not shown again.
    expect(repeatsToolResult(state.parts, 1)).toBe(true);
  });

  test("exit 0 and model runs read as their status", () => {
    expect(displayStatus(fold([["run.completed", { status: "succeeded", exit_code: 0 }]]))).toEqual(
      { label: "succeeded", tone: "succeeded" },
    );
    expect(displayStatus(fold([["run.completed", { status: "succeeded" }]])).label).toBe(
      "succeeded",
    );
    expect(displayStatus(fold([["run.completed", { status: "cancelled" }]])).label).toBe(
      "cancelled",
    );
  });

  test("a cancelled command keeps the lines it printed, and says it was cancelled", () => {
    const state = fold([
      started,
      printed("line 1\nline 2\n"),
      [
        "tool.completed",
        { tool_call_id: "shell_1", is_error: true, output: { text: "cancelled" } },
      ],
      ["run.completed", { status: "cancelled" }],
    ]);
    expect(state.parts[0]).toMatchObject({
      output: "line 1\nline 2\n",
      ending: "cancelled",
      done: true,
    });
  });

  test("a model's own words after a tool call are shown, even when they start alike", () => {
    const state = fold([
      started,
      ["tool.completed", { tool_call_id: "shell_1", is_error: false, output: { text: "42\n" } }],
      ["message.delta", { text: "42 is the answer" }],
    ]);
    expect(repeatsToolResult(state.parts, 1)).toBe(false);
  });

  test("a server before exit_code in the event: the output's exit_code still counts", () => {
    const state = fold([
      started,
      [
        "tool.completed",
        { tool_call_id: "shell_1", is_error: true, output: { text: "x", exit_code: 2 } },
      ],
    ]);
    expect(state.parts[0]).toMatchObject({ exitCode: 2 });
  });
});
