import { and, asc, eq, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { agentRuns, runApprovals } from "../db/schema.ts";
import { resolveApproval } from "./resolve-approval.ts";

/** Approvals expired per sweep; the next sweep takes the rest (oldest first). */
export const MAX_EXPIRIES_PER_SWEEP = 200;

/**
 * The sweeper's approval step: pending approvals past `expires_at` become `expired` (a
 * denial nobody made) and their runs pending again, in line for any node's slots
 * (resolve-approval.ts: no queue message needed). Each under its run's row lock, like a
 * decision: a person deciding at the same moment either wins (the expiry finds it decided)
 * or gets 409. Returns the expired approvals' run ids.
 */
export async function expireApprovals(db: Db, signal: AbortSignal): Promise<string[]> {
  const due = await db
    .select({ approvalId: runApprovals.approvalId, runId: runApprovals.runId })
    .from(runApprovals)
    .where(and(eq(runApprovals.status, "pending"), lt(runApprovals.expiresAt, sql`now()`)))
    .orderBy(asc(runApprovals.expiresAt))
    .limit(MAX_EXPIRIES_PER_SWEEP);
  const expired: string[] = [];
  for (const { approvalId, runId } of due) {
    signal.throwIfAborted();
    const done = await db.transaction(async (tx) => {
      const [run] = await tx
        .select({ uid: agentRuns.uid })
        .from(agentRuns)
        .where(eq(agentRuns.runId, runId))
        .for("update");
      if (run === undefined) return undefined;
      return resolveApproval(
        tx,
        { approvalId, runId, uid: run.uid },
        { status: "expired", decidedBy: null },
      );
    });
    if (done !== undefined) expired.push(runId);
  }
  return expired;
}
