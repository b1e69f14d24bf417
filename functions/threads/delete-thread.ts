import { and, eq, inArray } from "drizzle-orm";
import { cancelAwaitingRuns } from "../../shared/approvals/cancel-awaiting-runs.ts";
import type { Db } from "../../shared/db/client.ts";
import { agentRuns, checkpoints, conversations } from "../../shared/db/schema.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { findActiveThread } from "./thread-store.ts";

/** Runs in these states keep a thread from being deleted. */
const ACTIVE_RUN_STATUSES = ["pending", "running"] as const;

/**
 * Soft-deletes the caller's thread; 409 while one of its runs is active (a run awaiting
 * approval is cancelled instead: nothing runs it).
 *
 * Race with a run submission: the submitter holds the thread row FOR SHARE until it
 * commits. We first take the row FOR UPDATE (waiting for any submitter), and only then
 * look for active runs in a new statement, whose snapshot therefore includes a run that
 * submitter just committed. A submitter arriving after us blocks on our lock and then
 * finds the thread deleted (404).
 */
export async function deleteThread(db: Db, uid: string, threadId: string): Promise<void> {
  await db.transaction(async (tx) => {
    const found = await findActiveThread(tx, uid, threadId, "update");
    if (found === undefined) throw new WorkcellError("not_found", "No such thread.");
    // A run waiting for a person has no worker to stop: deleting the thread ends it.
    await cancelAwaitingRuns(tx, uid, threadId);
    const [active] = await tx
      .select({ runId: agentRuns.runId })
      .from(agentRuns)
      .where(
        and(
          eq(agentRuns.threadId, threadId),
          eq(agentRuns.uid, uid),
          inArray(agentRuns.status, [...ACTIVE_RUN_STATUSES]),
        ),
      )
      .limit(1);
    if (active !== undefined) {
      throw domainError("run_active", { details: { run_id: active.runId } });
    }
    await tx
      .update(conversations)
      .set({ status: "deleted", deletedAt: new Date() })
      .where(and(eq(conversations.threadId, threadId), eq(conversations.uid, uid)));
    // Its checkpoints go with it; the node's reconciler removes their directories.
    await tx
      .delete(checkpoints)
      .where(and(eq(checkpoints.threadId, threadId), eq(checkpoints.uid, uid)));
  });
}
