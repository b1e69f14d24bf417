import { and, eq, sql } from "drizzle-orm";
import { closePendingApprovals } from "../../shared/approvals/resolve-approval.ts";
import { assertNever } from "../../shared/assert-never.ts";
import type { Db, DbTransaction } from "../../shared/db/client.ts";
import { type AgentRun, agentRuns } from "../../shared/db/schema.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { insertTerminalEvent } from "../../shared/runs/insert-terminal-event.ts";
import { RUN_CANCEL_CHANNEL } from "../../shared/runs/run-channels.ts";

/**
 * Requests cancellation of the caller's run (202, idempotent; a run that finished
 * otherwise: 409). `ended` is true when this call itself ended the run (it was pending).
 *
 * A pending run has no worker yet, so it is cancelled right here: status `cancelled`
 * plus its terminal `run.completed` event, in one transaction holding the row lock. A
 * worker's claim is a conditional update on `status = 'pending'`, so it waits for the
 * lock and then matches nothing. A run awaiting approval has no worker either: it ends the
 * same way, its pending approval closed (a later decision gets 409). A running run gets `cancel_requested`, which its worker
 * observes (NOTIFY on workcell_run_cancel, or its heartbeat) and acts on.
 */
export async function cancelRun(
  db: Db,
  uid: string,
  runId: string,
): Promise<{ run: AgentRun; ended: boolean }> {
  return db.transaction(async (tx) => {
    const [run] = await tx
      .select()
      .from(agentRuns)
      .where(and(eq(agentRuns.runId, runId), eq(agentRuns.uid, uid)))
      .for("update");
    if (run === undefined) throw new WorkcellError("not_found", "No such run.");
    switch (run.status) {
      case "pending":
        return { run: await cancelPending(tx, run), ended: true };
      case "awaiting_approval":
        // Nobody runs it while it waits: it ends here, its pending approval closed.
        await closePendingApprovals(tx, run.runId, uid, "The run was cancelled.");
        return { run: await cancelPending(tx, run), ended: true };
      case "running":
        return { run: await requestCancel(tx, run), ended: false };
      case "cancelled":
        // Asking again for what was already asked is a success (idempotent).
        if (run.cancelRequested) return { run, ended: false };
        throw domainError("run_finished", { details: { status: run.status } });
      case "succeeded":
      case "failed":
        throw domainError("run_finished", { details: { status: run.status } });
      default:
        return assertNever(run.status, "run status");
    }
  });
}

async function cancelPending(tx: DbTransaction, run: AgentRun): Promise<AgentRun> {
  const [updated] = await tx
    .update(agentRuns)
    .set({ status: "cancelled", cancelRequested: true, finishedAt: sql`now()` })
    .where(eq(agentRuns.runId, run.runId))
    .returning();
  // Gap-free sequence: the next seq after whatever exists (normally none for a pending
  // run); the same event and NOTIFY the run worker and the expired-lease sweep write.
  await insertTerminalEvent(tx, run.runId, run.uid, undefined, { status: "cancelled" });
  if (updated === undefined) throw new Error("update of agent_runs returned no row");
  return updated;
}

async function requestCancel(tx: DbTransaction, run: AgentRun): Promise<AgentRun> {
  if (run.cancelRequested) return run;
  const [updated] = await tx
    .update(agentRuns)
    .set({ cancelRequested: true })
    .where(eq(agentRuns.runId, run.runId))
    .returning();
  await tx.execute(sql`select pg_notify(${RUN_CANCEL_CHANNEL}, ${run.runId})`);
  if (updated === undefined) throw new Error("update of agent_runs returned no row");
  return updated;
}
