import { sql } from "drizzle-orm";
import { approvalBody } from "../../shared/approvals/approval-body.ts";
import { approvalArguments, approvalHash } from "../../shared/approvals/approval-hash.ts";
import type { Db } from "../../shared/db/client.ts";
import { agentRuns, runApprovals, runEvents } from "../../shared/db/schema.ts";
import { RUN_EVENTS_CHANNEL, RUN_SLOTS_CHANNEL } from "../../shared/runs/run-channels.ts";
import { fencedRun, type RunFence } from "../runs/claim/run-fence.ts";
import type { LoopPause } from "./loop-approvals.ts";

/** A root run's loop stopped before a call that needs a person (drive-run → recorder). */
export interface RunPause {
  readonly kind: "paused";
  readonly pause: LoopPause;
  readonly timeoutSeconds: number;
  /** The sandbox generation the call was asked in. */
  readonly generation: number;
}

/** Tells a pause from an ending in what driveRun returns. */
export function isRunPause(value: object | undefined): value is RunPause {
  return value !== undefined && "kind" in value && value.kind === "paused";
}

/**
 * Parks a run for a person in one fenced transaction: the run becomes `awaiting_approval`
 * with no owner and no lease (it holds no worker slot: the slots channel is told in the
 * same statement), the pending approval is stored with the call, its hash and the loop's
 * state to resume from, and `approval.requested` is appended at `seq`. False when the
 * fence no longer holds: nothing was written.
 */
export async function recordPause(
  db: Db,
  fence: RunFence,
  seq: number,
  paused: RunPause,
  notifySlotsAs: string,
): Promise<boolean> {
  const call = paused.pause.pendingCalls[0];
  if (call === undefined) throw new Error("a pause without a pending call");
  const args = approvalArguments(call.arguments);
  return db.transaction(async (tx) => {
    const [run] = await tx
      .update(agentRuns)
      .set({ status: "awaiting_approval", ownerNode: null, leaseExpiresAt: null })
      .where(fencedRun(fence))
      .returning({
        runId: agentRuns.runId,
        slots: sql<string>`pg_notify(${RUN_SLOTS_CHANNEL}::text, ${notifySlotsAs}::text)::text`,
      });
    if (run === undefined) return false;
    const [row] = await tx
      .insert(runApprovals)
      .values({
        runId: fence.runId,
        uid: fence.uid,
        kind: "tool",
        status: "pending",
        tool: call.name,
        toolCallId: call.id,
        arguments: args,
        argumentsHash: approvalHash(call.name, args),
        generation: paused.generation,
        resumeState: paused.pause,
        expiresAt: sql`now() + make_interval(secs => ${paused.timeoutSeconds})`,
      })
      .returning();
    if (row === undefined) throw new Error("insert of run_approvals returned no row");
    await tx.insert(runEvents).values({
      runId: fence.runId,
      uid: fence.uid,
      seq,
      type: "approval.requested",
      data: approvalBody(row),
    });
    await tx.execute(sql`select pg_notify(${RUN_EVENTS_CHANNEL}::text, ${fence.runId}::text)`);
    return true;
  });
}
