import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { type RunError, type RunStatus, TERMINAL_STATUSES } from "../api/types.ts";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import { formatBytes } from "../ui/format.ts";
import type { ToolCall } from "./run-state.ts";
import { useRunStream } from "./use-run-stream.ts";

export function StatusBadge({ status }: { status: RunStatus }) {
  return (
    <span className={`badge badge-${status}`} data-testid="run-status">
      {status}
    </span>
  );
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
        <span className="muted">
          {!call.done ? " running…" : call.isError ? " failed" : ""}
          {call.exitCode !== undefined && call.exitCode !== 0 ? ` (exit ${call.exitCode})` : ""}
        </span>
      </summary>
      <pre className="tool-output" data-testid="tool-output">
        {call.output || (call.done ? "(no output)" : "")}
      </pre>
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
        <StatusBadge status={state.status} />
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
          return (
            <div key={key} className="reply" data-testid="reply">
              {part.text}
            </div>
          );
        }
        if (part.kind === "tool") return <ToolCallView key={key} call={part} />;
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
