import { and, eq, sql } from "drizzle-orm";
import type { DbTransaction } from "../db/client.ts";
import { agentRuns, type RunApprovalRow, runApprovals, runEvents } from "../db/schema.ts";
import { RUN_EVENTS_CHANNEL, RUN_SLOTS_CHANNEL } from "../runs/run-channels.ts";

/**
 * The slots-channel payload of a decision: not any node's id, so every node's run worker
 * (which skips only its own notifications) looks for the run at once.
 */
export const DECISION_NOTIFY_PAYLOAD = "approval-decided";

export interface ApprovalResolution {
  readonly status: "approved" | "denied" | "expired";
  readonly decidedBy: string | null;
  readonly note?: string;
  readonly scope?: "once" | "run";
}

/**
 * Records the one decision of a pending approval in `tx` (which holds its run's row lock):
 * the approval row, the run back to `pending` and already in line (`waiting_since`, as a
 * delivered dispatch leaves it: park-run.ts), a NOTIFY on the slots channel that wakes every
 * node's run worker at commit, and the `approval.resolved` event, with its NOTIFY. No queue
 * message: the waiting row is the durable part (every node's fill polls for it when a
 * notification is lost, decision 0173), so the resume skips the SQS hop and its long poll.
 * Undefined when the approval is no longer pending (a second decision, an expiry that lost
 * the race): then nothing was written.
 */
export async function resolveApproval(
  tx: DbTransaction,
  approval: Pick<RunApprovalRow, "approvalId" | "runId" | "uid">,
  resolution: ApprovalResolution,
): Promise<RunApprovalRow | undefined> {
  const [row] = await tx
    .update(runApprovals)
    .set({
      status: resolution.status,
      decidedAt: sql`now()`,
      decidedBy: resolution.decidedBy,
      note: resolution.note ?? null,
      scope: resolution.status === "approved" ? (resolution.scope ?? "once") : null,
    })
    .where(
      and(eq(runApprovals.approvalId, approval.approvalId), eq(runApprovals.status, "pending")),
    )
    .returning();
  if (row === undefined) return undefined;
  // A network approval's run is running: its worker, which holds the connection and the
  // run's event log, sees the decision and appends approval.resolved itself (decision 0137).
  if (row.kind === "network") return row;
  const data = {
    approval_id: row.approvalId,
    status: row.status,
    ...(row.decidedBy === null ? {} : { decided_by: row.decidedBy }),
    ...(row.note === null ? {} : { note: row.note }),
  };
  // One statement (the resume waits for this commit): the run back in line, the event
  // appended, both NOTIFYs sent at commit. Both CTEs run whether or not they are read.
  await tx.execute(
    sql`with resumed as (
          update ${agentRuns} set status = 'pending', dispatched_at = now(),
            waiting_since = clock_timestamp()
          where run_id = ${row.runId}::uuid and status = 'awaiting_approval'
          returning run_id
        ), appended as (
          insert into ${runEvents} (run_id, uid, seq, type, data)
          values (${row.runId}::uuid, ${row.uid},
            (select coalesce(max(seq), 0) + 1 from ${runEvents} where run_id = ${row.runId}::uuid),
            'approval.resolved', ${JSON.stringify(data)}::jsonb)
          returning seq
        )
        select pg_notify(${RUN_EVENTS_CHANNEL}::text, ${row.runId}::text),
          pg_notify(${RUN_SLOTS_CHANNEL}::text, ${DECISION_NOTIFY_PAYLOAD}::text)`,
  );
  return row;
}

/**
 * Closes the pending approvals of a run that ends while it waits (a cancel): denied by
 * `decidedBy`, so a late decision gets 409 and the sweeper has nothing to expire.
 */
export async function closePendingApprovals(
  tx: DbTransaction,
  runId: string,
  decidedBy: string,
  note: string,
): Promise<void> {
  await tx
    .update(runApprovals)
    .set({ status: "denied", decidedAt: sql`now()`, decidedBy, note })
    .where(and(eq(runApprovals.runId, runId), eq(runApprovals.status, "pending")));
}
