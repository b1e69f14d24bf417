import type { AgentLoopResult } from "../agent/index.ts";
import type { RunEnding } from "../claim/finish-run.ts";
import type { StopReason } from "./run-control.ts";

export const NODE_SHUTDOWN_ERROR = Object.freeze({
  code: "node_shutdown",
  message:
    "The agent-host running this run was shut down before the run finished. Its commands may have partly run: check the Workdir, then submit the task again.",
});

/**
 * How a finished agent loop is recorded, given why (if at all) the run was stopped:
 * - lease lost: nothing is recorded (`undefined`): the run is not ours any more;
 * - stopped by shutdown: the loop saw an abort and says `cancelled`, but nobody asked to
 *   cancel, so it is `failed/node_shutdown` (not retried, for the same reason as node_lost);
 * - otherwise what the loop decided (a user cancel is `cancelled`).
 */
export function runEndingOf(
  result: Pick<AgentLoopResult, "status" | "finalText" | "error" | "lastExitCode">,
  stop: { readonly reason: StopReason | undefined; readonly leaseLost: boolean },
  /** The shell model ran the input as one command: its exit code is the run's (docs/api.md). */
  reportsExitCode = false,
): RunEnding | undefined {
  if (stop.leaseLost) return undefined;
  if (stop.reason === "shutdown" && result.status === "cancelled") {
    return { status: "failed", error: NODE_SHUTDOWN_ERROR };
  }
  switch (result.status) {
    case "succeeded":
      return {
        status: "succeeded",
        finalText: result.finalText,
        ...(reportsExitCode && result.lastExitCode !== undefined
          ? { exitCode: result.lastExitCode }
          : {}),
      };
    case "cancelled":
      return { status: "cancelled" };
    case "failed":
      return {
        status: "failed",
        error: result.error ?? {
          code: "internal",
          message: "The run failed without a reason: report it to the operator.",
        },
      };
  }
}

/** The ending of a run stopped before its loop started (during preparation). */
export function stoppedBeforeStart(reason: StopReason): RunEnding | undefined {
  switch (reason) {
    case "lease_lost":
      return undefined;
    case "cancel":
      return { status: "cancelled" };
    case "shutdown":
      return { status: "failed", error: NODE_SHUTDOWN_ERROR };
  }
}
