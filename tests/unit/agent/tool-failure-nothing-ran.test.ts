import { describe, expect, it } from "vitest";
import { classifyToolError } from "../../../agent-host/runs/agent/tool-failure.ts";
import { domainError } from "../../../shared/errors/domain-errors.ts";

// Issue 38: a sandbox that never started says "nothing ran"; tool_interrupted ("the
// command may have completed") only when the command may have run.
describe("classifyToolError and a sandbox that never started", () => {
  const live = new AbortController().signal;

  it("sandbox_start_failed ends the run with that code and a message that nothing ran", () => {
    const failure = classifyToolError(
      domainError("sandbox_start_failed", { details: { command_ran: "no" } }),
      live,
    );
    expect(failure).toMatchObject({ kind: "fatal", error: { code: "sandbox_start_failed" } });
    expect(failure.kind === "fatal" && failure.error.message).toMatch(/nothing of the command ran/);
  });

  it("an unknown error mid-call is still tool_interrupted: the command may have run", () => {
    expect(classifyToolError(new Error("socket hang up"), live)).toMatchObject({
      kind: "fatal",
      error: { code: "tool_interrupted" },
    });
  });
});
