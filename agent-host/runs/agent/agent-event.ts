import type { TerminalRunStatus } from "../../../shared/contracts/run.ts";
import type { RunEvent } from "../../../shared/contracts/run-event.ts";

/** What the worker adds when it persists an event: the loop never knows them. */
type Envelope = "seq" | "run_id" | "created_at";

/** An event of shared/contracts/run-event.ts without its envelope. */
type ContractEvent<T extends RunEvent["type"]> = Omit<Extract<RunEvent, { type: T }>, Envelope>;

/** Why a run ended badly: the `error` of its `run.completed` (runErrorSchema). */
export interface RunError {
  /** snake_case, e.g. `max_turns_exceeded`, `model_rate_limited`, `stale_generation`. */
  readonly code: string;
  readonly message: string;
}

/**
 * A sub-agent run was created for a `spawn_subagent` call. Not (yet) in
 * shared/contracts/run-event.ts: the contract needs this type added before the worker
 * can persist it.
 */
export interface SubagentStartedEvent {
  readonly type: "subagent.started";
  readonly data: {
    readonly tool_call_id: string;
    readonly run_id: string;
    readonly thread_id: string;
  };
}

/** The sub-agent run of a `spawn_subagent` call ended. Not yet in the contract either. */
export interface SubagentCompletedEvent {
  readonly type: "subagent.completed";
  readonly data: {
    readonly tool_call_id: string;
    readonly run_id: string;
    readonly status: TerminalRunStatus;
    readonly error?: RunError;
  };
}

/**
 * Everything the agent loop (and its tools) report, in order, through `emit`. The worker
 * adds seq / run_id / created_at and appends them to `run_events` without gaps.
 *
 * Order of one run: `run.status` (running) first; per model turn some `message.delta`,
 * then `message.completed` when the turn produced text; per tool call `tool.started`, `tool.output` while a command prints …
 * (`subagent.*` in between for `spawn_subagent`) … `tool.completed`. No `run.completed`:
 * the loop returns its ending and the worker's finishRun writes that event, the only writer
 * of it, in the transaction that sets the run's status.
 */
export type AgentEvent =
  | ContractEvent<"run.status">
  | ContractEvent<"message.delta">
  | ContractEvent<"message.completed">
  | ContractEvent<"tool.started">
  | ContractEvent<"tool.output">
  | ContractEvent<"tool.completed">
  | SubagentStartedEvent
  | SubagentCompletedEvent;

export type AgentEventType = AgentEvent["type"];

/**
 * Receives each event and is awaited before the loop goes on, so events are persisted in
 * the order they happened. If it rejects (the worker lost its lease, the database is
 * gone) the loop stops at once and rejects with that error: it writes nothing more.
 */
export type EmitFn = (event: AgentEvent) => void | Promise<void>;
