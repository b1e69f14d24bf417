import type { RunError, RunEvent, RunStatus } from "../api/types.ts";

export type ToolCall = {
  kind: "tool";
  id: string;
  name: string;
  input: unknown;
  /** Live stdout/stderr (tool.output), then the result once completed. */
  output: string;
  done: boolean;
  isError: boolean;
  /** The command's exit code, when the tool reports one (bash). */
  exitCode?: number;
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
export type RunPart = TextPart | ToolCall | SubagentPart | NetworkPart;

/** What a run looks like after the events seen so far: parts in the order they happened. */
export type RunState = { status: RunStatus; parts: RunPart[]; error?: RunError; lastSeq: number };

export function initialRunState(status: RunStatus, error?: RunError): RunState {
  return { status, parts: [], lastSeq: 0, ...(error === undefined ? {} : { error }) };
}

function asText(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}

/** Tool results are a string or an object whose `text` is what the tool printed. */
function toolResult(output: unknown): { text: string; exitCode?: number } {
  if (output !== null && typeof output === "object" && "text" in output) {
    const o = output as { text: unknown; exit_code?: unknown };
    return {
      text: asText(o.text),
      ...(typeof o.exit_code === "number" ? { exitCode: o.exit_code } : {}),
    };
  }
  return { text: asText(output) };
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
        const result = toolResult(d.output);
        parts[i] = {
          ...found,
          output: result.text,
          done: true,
          isError: d.is_error === true,
          ...(result.exitCode === undefined ? {} : { exitCode: result.exitCode }),
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
    case "run.completed":
      next.status = str(d, "status") as RunStatus;
      if (d.error !== undefined) next.error = d.error as RunError;
      break;
    default:
      break;
  }
  return next;
}
