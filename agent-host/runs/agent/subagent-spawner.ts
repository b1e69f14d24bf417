import type { TerminalRunStatus } from "../../../shared/contracts/run.ts";
import type { RunError } from "./agent-event.ts";

export interface SubagentRequest {
  /** The task, as the parent model wrote it: the child run's user message. */
  readonly task: string;
  /** The parent's `spawn_subagent` call, for logs and events. */
  readonly toolCallId: string;
  /**
   * The spawner calls this once the child run is committed (before it executes), so the
   * parent's stream can say `subagent.started` with the child's ids while it runs.
   */
  readonly onStarted: (child: {
    readonly runId: string;
    readonly threadId: string;
  }) => Promise<void>;
}

export interface SubagentOutcome {
  readonly runId: string;
  readonly threadId: string;
  readonly status: TerminalRunStatus;
  /** The child's final answer ("" unless it succeeded). */
  readonly finalText: string;
  readonly error?: RunError;
}

/**
 * Creates and runs a child run (a child conversation in the parent's project, the
 * parent's runtime scope, so the same sandbox and Workdir) and resolves once it reached a
 * terminal status. Implemented by the run worker.
 *
 * On abort of `signal` (the parent is cancelled) the spawner cancels the child and
 * resolves only when the child has ended (`cancelled`), so children end before parents
 * (docs/architecture.md §4.5). Refusals (depth or fan-out limit, quota) are thrown as
 * 4xx WorkcellErrors and reach the model as a failed tool call.
 */
export interface SubagentSpawner {
  spawn(request: SubagentRequest, signal: AbortSignal): Promise<SubagentOutcome>;
}
