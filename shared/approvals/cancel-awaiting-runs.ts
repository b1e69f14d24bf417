import { and, eq, sql } from "drizzle-orm";
import type { DbTransaction } from "../db/client.ts";
import { agentRuns } from "../db/schema.ts";
import { insertTerminalEvent } from "../runs/insert-terminal-event.ts";
import { closePendingApprovals } from "./resolve-approval.ts";

/**
 * Ends the thread's runs that wait for a person, in `tx` (deleting the thread cancels them,
 * docs/architecture.md §14): no worker holds them, so each ends `cancelled` here with its
 * `run.completed` event, its pending approval closed. Returns their ids.
 */
export async function cancelAwaitingRuns(
  tx: DbTransaction,
  uid: string,
  threadId: string,
): Promise<string[]> {
  const waiting = await tx
    .select({ runId: agentRuns.runId })
    .from(agentRuns)
    .where(
      and(
        eq(agentRuns.threadId, threadId),
        eq(agentRuns.uid, uid),
        eq(agentRuns.status, "awaiting_approval"),
      ),
    )
    .for("update");
  for (const { runId } of waiting) {
    await closePendingApprovals(tx, runId, uid, "The thread was deleted.");
    await tx
      .update(agentRuns)
      .set({ status: "cancelled", cancelRequested: true, finishedAt: sql`now()` })
      .where(eq(agentRuns.runId, runId));
    await insertTerminalEvent(tx, runId, uid, undefined, { status: "cancelled" });
  }
  return waiting.map((r) => r.runId);
}
