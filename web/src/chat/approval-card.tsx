import { useMutation } from "@tanstack/react-query";
import type { ApprovalDecision } from "../api/types.ts";
import { useConsole } from "../console-context.tsx";
import { ErrorMessage } from "../ui/error-message.tsx";
import type { ApprovalPart } from "./run-state.ts";

function decisionText(part: ApprovalPart): string {
  switch (part.status) {
    case "pending":
      return `Waiting for your decision (until ${new Date(part.expiresAt).toLocaleString()})`;
    case "approved":
      return `Approved by ${part.decidedBy ?? "someone"}`;
    case "denied":
      return `Denied by ${part.decidedBy ?? "someone"}${part.note ? `: ${part.note}` : ""}`;
    case "expired":
      return "Expired: nobody decided in time";
  }
}

/**
 * A call the run waits on a person for: the tool and its full arguments, exactly as they
 * will run (or, for a network approval, the host and port its held connection asks for), with Approve / Approve for this run / Deny while it is pending (docs/api.md
 * "Approvals"). The decision arrives back as an `approval.resolved` event.
 */
export function ApprovalCard({ runId, part }: { runId: string; part: ApprovalPart }) {
  const { api } = useConsole();
  const decide = useMutation({
    mutationFn: (decision: ApprovalDecision) => api.runs.decide(runId, part.approvalId, decision),
  });
  const pending = part.status === "pending";
  const busy = decide.isPending || decide.isSuccess;
  return (
    <section
      className={`approval approval-${part.status}`}
      data-testid="approval"
      data-status={part.status}
      aria-label={
        part.network === undefined
          ? `Approval of a ${part.tool} call`
          : `Approval of a connection to ${part.network.host}`
      }
    >
      <div className="approval-head">
        <strong>Approval needed:</strong>{" "}
        {part.network === undefined ? (
          <span className="tool-name">{part.tool}</span>
        ) : (
          <span className="tool-name">network</span>
        )}
      </div>
      {part.network === undefined ? (
        <pre className="approval-args" data-testid="approval-arguments">
          {JSON.stringify(part.arguments, null, 2)}
        </pre>
      ) : (
        <>
          <pre className="approval-args" data-testid="approval-host">
            {`${part.network.host}:${part.network.port}`}
          </pre>
          <div className="muted">
            A command's connection to this host, outside the run's allow-list, waits for you.
          </div>
        </>
      )}
      <div className="muted" data-testid="approval-state">
        {decisionText(part)}
      </div>
      {pending && (
        <div className="approval-actions">
          <button
            type="button"
            disabled={busy}
            onClick={() => decide.mutate({ decision: "approve" })}
          >
            Approve
          </button>
          <button
            type="button"
            className="subtle"
            disabled={busy}
            onClick={() => decide.mutate({ decision: "approve", scope: "run" })}
          >
            Approve for this run
          </button>
          <button
            type="button"
            className="danger"
            disabled={busy}
            onClick={() => decide.mutate({ decision: "deny" })}
          >
            Deny
          </button>
        </div>
      )}
      <ErrorMessage error={decide.error} title="Decision failed" />
    </section>
  );
}
