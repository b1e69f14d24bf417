import type { RunError, RunEvent, RunStatus } from "../api/types.ts";

export type ToolCall = {
  kind: "tool";
  id: string;
  name: string;
  input: unknown;
  /**
   * What the command printed (tool.output, live); the result text when nothing was
   * streamed. The printed lines stay once the call ends, also when it was cancelled.
   */
  output: string;
  /** The result as the model saw it (tool.completed), once done. */
  result?: string;
  done: boolean;
  isError: boolean;
  /** The command's exit code, when the tool reports one (bash). */
  exitCode?: number;
  /** How a command ended when it did not exit: "timed_out", "cancelled". */
  ending?: string;
};
export type TextPart = { kind: "text"; text: string };
export type SubagentPart = {
  kind: "subagent";
  toolCallId: string;
  runId: string;
  threadId: string;
  status: RunStatus;
  error?: RunError;
};
/** One connection the run's sandbox asked the egress proxy for (a `network.request` event). */
export type NetworkPart = {
  kind: "network";
  host: string;
  port: number;
  decision: "allowed" | "denied";
  /** Why it was refused or cut; empty when it went through. */
  reason: string;
};
/** A call the run waits on a person for (`approval.requested`), and its decision. */
export type ApprovalPart = {
  kind: "approval";
  approvalId: string;
  /** A network approval's connection (`kind: "network"`): no tool, no arguments. */
  network?: { host: string; port: number };
  tool: string;
  arguments: unknown;
  status: "pending" | "approved" | "denied" | "expired";
  expiresAt: string;
  decidedBy?: string;
  note?: string;
};
export type RunPart = TextPart | ToolCall | SubagentPart | NetworkPart | ApprovalPart;

/**
 * What a run looks like after the events seen so far: parts in the order they happened.
 * `exitCode`: a shell-model run's command exit code (run.completed), which decides
 * whether a succeeded run reads "succeeded" or "command failed (exit N)".
 */
export type RunState = {
  status: RunStatus;
  parts: RunPart[];
  error?: RunError;
  exitCode?: number;
  lastSeq: number;
};

export function initialRunState(status: RunStatus, error?: RunError): RunState {
  return { status, parts: [], lastSeq: 0, ...(error === undefined ? {} : { error }) };
}

function asText(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}

/**
 * Tool results are a string or an object whose `text` is what the tool printed (and, for
 * bash, `exit_code` and `status`). The event's own `exit_code` wins (docs/api.md); the one in
 * `output` is what servers before it sent.
 */
function toolResult(data: Record<string, unknown>): {
  text: string;
  exitCode?: number;
  ending?: string;
} {
  const output = data.output;
  const o =
    output !== null && typeof output === "object" && "text" in output
      ? (output as { text: unknown; exit_code?: unknown; status?: unknown })
      : { text: output };
  const exitCode = typeof data.exit_code === "number" ? data.exit_code : o.exit_code;
  const cancelled = data.is_error === true && o.text === "cancelled" && exitCode === undefined;
  const ending = cancelled ? "cancelled" : o.status === "timed_out" ? "timed_out" : undefined;
  return {
    text: asText(o.text),
    ...(typeof exitCode === "number" ? { exitCode } : {}),
    ...(ending === undefined ? {} : { ending }),
  };
}

function str(data: Record<string, unknown>, key: string): string {
  const v = data[key];
  return typeof v === "string" ? v : "";
}

/**
 * Folds one event into the state. Pure (the same events always give the same view), so
 * a replay after a reload shows exactly what a live viewer saw.
 */
export function applyRunEvent(state: RunState, event: RunEvent): RunState {
  if (event.seq <= state.lastSeq) return state;
  const parts = [...state.parts];
  const next: RunState = { ...state, parts, lastSeq: event.seq };
  const d = event.data;
  const tool = (id: string) => parts.findIndex((p) => p.kind === "tool" && p.id === id);
  switch (event.type) {
    case "run.status":
      next.status = str(d, "status") as RunStatus;
      break;
    case "message.delta": {
      const last = parts.at(-1);
      if (last?.kind === "text")
        parts[parts.length - 1] = { kind: "text", text: last.text + str(d, "text") };
      else parts.push({ kind: "text", text: str(d, "text") });
      break;
    }
    case "message.completed": {
      // The whole message: replaces the deltas of the text run it ends (or adds it when the
      // deltas were not streamed).
      const last = parts.at(-1);
      if (last?.kind === "text") parts[parts.length - 1] = { kind: "text", text: str(d, "text") };
      else if (str(d, "text") !== "") parts.push({ kind: "text", text: str(d, "text") });
      break;
    }
    case "tool.started":
      parts.push({
        kind: "tool",
        id: str(d, "tool_call_id"),
        name: str(d, "name"),
        input: d.input,
        output: "",
        done: false,
        isError: false,
      });
      break;
    case "tool.output": {
      const i = tool(str(d, "tool_call_id"));
      const chunk = str(d, "text") || str(d, "chunk") || str(d, "data");
      const found = parts[i];
      if (found?.kind === "tool") parts[i] = { ...found, output: found.output + chunk };
      break;
    }
    case "tool.completed": {
      const i = tool(str(d, "tool_call_id"));
      const found = parts[i];
      if (found?.kind === "tool") {
        const result = toolResult(d);
        parts[i] = {
          ...found,
          // Lines printed live stay (a cancel's result is just "cancelled").
          output: found.output === "" ? result.text : found.output,
          result: result.text,
          done: true,
          isError: d.is_error === true,
          ...(result.exitCode === undefined ? {} : { exitCode: result.exitCode }),
          ...(result.ending === undefined ? {} : { ending: result.ending }),
        };
      }
      break;
    }
    case "subagent.started":
      parts.push({
        kind: "subagent",
        toolCallId: str(d, "tool_call_id"),
        runId: str(d, "run_id"),
        threadId: str(d, "thread_id"),
        status: "running",
      });
      break;
    case "subagent.completed": {
      const i = parts.findIndex((p) => p.kind === "subagent" && p.runId === str(d, "run_id"));
      const found = parts[i];
      if (found?.kind === "subagent") {
        parts[i] = {
          ...found,
          status: str(d, "status") as RunStatus,
          ...(d.error === undefined ? {} : { error: d.error as RunError }),
        };
      }
      break;
    }
    case "network.request":
      parts.push({
        kind: "network",
        host: str(d, "host"),
        port: typeof d.port === "number" ? d.port : 0,
        decision: str(d, "decision") === "allowed" ? "allowed" : "denied",
        reason: str(d, "reason"),
      });
      break;
    case "approval.requested": {
      const network = str(d, "kind") === "network";
      // A network approval holds one connection; the run itself keeps running.
      if (!network) next.status = "awaiting_approval";
      parts.push({
        kind: "approval",
        approvalId: str(d, "approval_id"),
        ...(network
          ? { network: { host: str(d, "host"), port: typeof d.port === "number" ? d.port : 0 } }
          : {}),
        tool: str(d, "tool"),
        arguments: d.arguments,
        status: "pending",
        expiresAt: str(d, "expires_at"),
      });
      break;
    }
    case "approval.resolved": {
      const i = parts.findIndex(
        (p) => p.kind === "approval" && p.approvalId === str(d, "approval_id"),
      );
      const found = parts[i];
      if (found?.kind === "approval") {
        const status = str(d, "status") as ApprovalPart["status"];
        parts[i] = {
          ...found,
          status,
          ...(str(d, "decided_by") === "" ? {} : { decidedBy: str(d, "decided_by") }),
          ...(str(d, "note") === "" ? {} : { note: str(d, "note") }),
        };
      }
      // Decided: the run is pending until a node resumes it.
      if (next.status === "awaiting_approval") next.status = "pending";
      break;
    }
    case "run.completed":
      next.status = str(d, "status") as RunStatus;
      if (d.error !== undefined) next.error = d.error as RunError;
      if (typeof d.exit_code === "number") next.exitCode = d.exit_code;
      break;
    default:
      break;
  }
  return next;
}

/**
 * The run's status as a person should read it: a shell-model run whose command exited
 * non-zero `succeeded` as a run, but reads "command failed (exit 3)", in the failed colour.
 */
export function displayStatus(state: RunState): { label: string; tone: RunStatus } {
  if (state.status === "succeeded" && state.exitCode !== undefined && state.exitCode !== 0) {
    return { label: `command failed (exit ${state.exitCode})`, tone: "failed" };
  }
  return { label: state.status, tone: state.status };
}

/**
 * Whether a text part only repeats the tool result before it: the shell model's reply is
 * its command's result, already shown in the tool's output block. A prefix counts too, so
 * a reply still streaming in does not flash on screen.
 */
export function repeatsToolResult(parts: readonly RunPart[], index: number): boolean {
  const part = parts[index];
  const before = parts[index - 1];
  if (part?.kind !== "text" || before?.kind !== "tool" || before.result === undefined) return false;
  const text = part.text.trimEnd();
  return text !== "" && before.result.trimEnd().startsWith(text);
}
