import { useMutation, useQuery } from "@tanstack/react-query";
import { useEffect, useMemo, useState } from "react";
import { type RunError, type RunStatus, TERMINAL_STATUSES } from "../api/types.ts";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { formatBytes } from "../ui/format.ts";
import { ApprovalCard } from "./approval-card.tsx";
import { displayStatus, type RunState, repeatsToolResult, type ToolCall } from "./run-state.ts";
import { useRunStream } from "./use-run-stream.ts";

/** The run's status; a shell run whose command failed reads "command failed (exit N)". */
export function StatusBadge({ state }: { state: Pick<RunState, "status" | "exitCode"> }) {
  const { label, tone } = displayStatus({ ...state, parts: [], lastSeq: 0 });
  return (
    <span className={`badge badge-${tone}`} data-testid="run-status">
      {label}
    </span>
  );
}

/**
 * The most of a command's output rendered: the rest stays in memory for the download
 * (a 20,000-line output would otherwise be a DOM of megabytes the browser lays out).
 */
const SHOWN_OUTPUT_CHARS = 64 * 1024;

function ToolOutput({ call }: { call: ToolCall }) {
  const full = call.output || (call.done ? "(no output)" : "");
  const cut = full.length > SHOWN_OUTPUT_CHARS;
  // The newest output matters most while it runs: the tail is shown.
  const shown = cut ? full.slice(full.length - SHOWN_OUTPUT_CHARS) : full;
  const download = useMemo(
    () => (cut ? URL.createObjectURL(new Blob([full], { type: "text/plain" })) : undefined),
    [cut, full],
  );
  useEffect(() => () => (download ? URL.revokeObjectURL(download) : undefined), [download]);
  return (
    <>
      {cut && (
        <p className="muted output-truncated" data-testid="output-truncated">
          Output truncated: the last {SHOWN_OUTPUT_CHARS.toLocaleString("en")} of{" "}
          {full.length.toLocaleString("en")} characters shown.{" "}
          <a href={download} download={`${call.name}-${call.id}.txt`}>
            Download the full output
          </a>
        </p>
      )}
      <pre className="tool-output" data-testid="tool-output">
        {shown}
      </pre>
    </>
  );
}

function toolState(call: ToolCall): string {
  if (!call.done) return " running…";
  if (call.ending === "cancelled") return " cancelled";
  if (call.ending === "timed_out") return " timed out";
  if (call.exitCode !== undefined && call.exitCode !== 0) return ` failed (exit ${call.exitCode})`;
  return call.isError ? " failed" : "";
}

function RunErrorView({ error }: { error: RunError }) {
  return (
    <div className="error" role="alert" data-testid="run-error">
      <code className="error-code">{error.code}</code> <span>{error.message}</span>
    </div>
  );
}

function ToolCallView({ call }: { call: ToolCall }) {
  const command =
    call.input !== null && typeof call.input === "object" && "command" in call.input
      ? String((call.input as { command: unknown }).command)
      : JSON.stringify(call.input);
  return (
    <details className={`tool${call.isError ? " tool-error" : ""}`} open>
      <summary>
        <span className="tool-name">{call.name}</span> <code className="tool-input">{command}</code>
        <span className="muted" data-testid="tool-state">
          {toolState(call)}
        </span>
      </summary>
      <ToolOutput call={call} />
    </details>
  );
}

function RunChangesView({ runId }: { runId: string }) {
  const { api } = useConsole();
  const changes = useQuery({
    queryKey: ["run-changes", runId],
    queryFn: ({ signal }) => api.runs.changes(runId, signal),
  });
  if (changes.isPending) return <p className="muted">Loading changes…</p>;
  if (changes.isError) return <ErrorMessage error={changes.error} />;
  if (changes.data.items.length === 0) return <p className="muted">No files changed.</p>;
  return (
    <ul className="changes" data-testid="run-changes">
      {changes.data.items.map((c) => (
        <li key={c.path}>
          <span className={`change change-${c.change}`}>{c.change}</span> <code>{c.path}</code>{" "}
          <span className="muted">{c.change === "deleted" ? "" : formatBytes(c.size)}</span>
        </li>
      ))}
      {changes.data.truncated && <li className="muted">… and more (list truncated)</li>}
    </ul>
  );
}

/** One run: its reply, tool calls with live output, nested sub-agents, status and error. */
export function RunView(p: {
  runId: string;
  status: RunStatus;
  error?: RunError;
  nested?: boolean;
}) {
  const { api } = useConsole();
  const { state, streamError } = useRunStream(p.runId, p.status, p.error);
  const [showChanges, setShowChanges] = useState(false);
  const cancel = useMutation({ mutationFn: () => api.runs.cancel(p.runId) });
  const active = !TERMINAL_STATUSES.includes(state.status);
  return (
    <article
      className={`run${p.nested ? " run-nested" : ""}`}
      data-run-id={p.runId}
      data-testid="run"
    >
      <div className="run-meta">
        <StatusBadge state={state} />
        {active && (
          <button
            type="button"
            className="subtle"
            onClick={() => cancel.mutate()}
            disabled={cancel.isPending || cancel.isSuccess}
          >
            {cancel.isSuccess ? "Cancelling…" : "Cancel"}
          </button>
        )}
        {!active && !p.nested && (
          <button
            type="button"
            className="subtle"
            onClick={() => setShowChanges((v) => !v)}
            aria-expanded={showChanges}
          >
            {showChanges ? "Hide changes" : "Changes"}
          </button>
        )}
      </div>
      {state.parts.map((part, i) => {
        const key = `${part.kind}-${i}`;
        if (part.kind === "text") {
          if (repeatsToolResult(state.parts, i)) return null;
          return (
            <div key={key} className="reply" data-testid="reply">
              {part.text}
            </div>
          );
        }
        if (part.kind === "tool") return <ToolCallView key={key} call={part} />;
        if (part.kind === "approval") return <ApprovalCard key={key} runId={p.runId} part={part} />;
        if (part.kind === "network") {
          return (
            <div
              key={key}
              className={`network ${part.decision}`}
              data-testid="network-request"
              data-decision={part.decision}
            >
              {part.decision === "allowed" ? "Network: " : "Network refused: "}
              {part.host}:{part.port}
              {part.reason === "" ? "" : ` (${part.reason})`}
            </div>
          );
        }
        return (
          <div key={key} className="subagent">
            <div className="muted">Sub-agent</div>
            <RunView
              runId={part.runId}
              status={part.status}
              nested
              {...(part.error ? { error: part.error } : {})}
            />
          </div>
        );
      })}
      {active && state.parts.length === 0 && <p className="muted">Waiting for the agent…</p>}
      {state.error !== undefined && <RunErrorView error={state.error} />}
      <ErrorMessage error={cancel.error} title="Cancel failed" />
      <ErrorMessage error={streamError} title="Event stream" />
      {showChanges && <RunChangesView runId={p.runId} />}
    </article>
  );
}
