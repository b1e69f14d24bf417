import { and, asc, eq } from "drizzle-orm";
import {
  type ApprovalResolution,
  resolveApproval,
} from "../../shared/approvals/resolve-approval.ts";
import type { ApprovalDecision } from "../../shared/contracts/approval.ts";
import type { Db } from "../../shared/db/client.ts";
import { agentRuns, type RunApprovalRow, runApprovals } from "../../shared/db/schema.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";

/** The caller's run's approvals, oldest first; undefined when the run is not the caller's. */
export async function listApprovals(
  db: Db,
  uid: string,
  runId: string,
): Promise<RunApprovalRow[] | undefined> {
  const [run] = await db
    .select({ runId: agentRuns.runId })
    .from(agentRuns)
    .where(and(eq(agentRuns.runId, runId), eq(agentRuns.uid, uid)));
  if (run === undefined) return undefined;
  return db
    .select()
    .from(runApprovals)
    .where(and(eq(runApprovals.runId, runId), eq(runApprovals.uid, uid)))
    .orderBy(asc(runApprovals.requestedAt));
}

/**
 * Records the caller's decision on a pending approval of their run, once: the run's row is
 * locked first (the same order as a cancel), so a decision and a cancel, or two decisions,
 * are serialised and the second finds the approval decided (409). Another user's run or
 * approval: 404, and nothing is written.
 */
export async function decideApproval(
  db: Db,
  uid: string,
  ids: { readonly runId: string; readonly approvalId: string },
  decision: ApprovalDecision,
): Promise<RunApprovalRow> {
  return db.transaction(async (tx) => {
    // The run's row lock and the approval in one round trip (the resume waits for the
    // commit). The approval is read from the statement's snapshot, which may predate the
    // lock; what decides is resolveApproval's update, conditional on `pending` and re-read
    // after the lock: a decision or cancel that committed first makes this one a 409.
    const [found] = await tx
      .select({ runId: agentRuns.runId, approval: runApprovals })
      .from(agentRuns)
      .leftJoin(
        runApprovals,
        and(
          eq(runApprovals.approvalId, ids.approvalId),
          eq(runApprovals.runId, agentRuns.runId),
          eq(runApprovals.uid, uid),
        ),
      )
      .where(and(eq(agentRuns.runId, ids.runId), eq(agentRuns.uid, uid)))
      .for("update", { of: agentRuns });
    if (found === undefined) throw new WorkcellError("not_found", "No such run.");
    const { approval } = found;
    if (approval === null) throw new WorkcellError("not_found", "No such approval.");
    if (approval.status !== "pending") {
      throw domainError("approval_decided", { details: { status: approval.status } });
    }
    const resolution: ApprovalResolution = {
      status: decision.decision === "approve" ? "approved" : "denied",
      decidedBy: uid,
      ...(decision.note === undefined ? {} : { note: decision.note }),
      ...(decision.scope === undefined ? {} : { scope: decision.scope }),
    };
    const decided = await resolveApproval(tx, approval, resolution);
    if (decided === undefined) {
      throw domainError("approval_decided", { details: { status: "decided" } });
    }
    return decided;
  });
}
