import { sql } from "drizzle-orm";
import type { Db } from "../../../shared/db/client.ts";
import { agentRuns, changeBatches, messages } from "../../../shared/db/schema.ts";
import {
  insertTerminalEvent,
  type TerminalEnding,
} from "../../../shared/runs/insert-terminal-event.ts";
import { RUN_SLOTS_CHANNEL } from "../../../shared/runs/run-channels.ts";
import type { ChangeBatch } from "../change-batch/change-batch.ts";
import { fencedRun, type RunFence } from "./run-fence.ts";

/** How a run ended, as the worker records it. */
export interface RunEnding extends TerminalEnding {
  /** The final answer, stored as the assistant message of the run's thread. */
  readonly finalText?: string;
}

/**
 * Ends a run in one transaction, fenced: status (+ error, finished_at), the final
 * assistant message and the terminal `run.completed` event (seq = `seq`) are committed
 * together or not at all, so a reader never sees `run.completed` on a run that still
 * says running, nor a succeeded run without its answer. False when the fence no longer
 * holds (lease lost): then nothing was written.
 *
 * `unrepaired` are change batches of the run's tree whose commit failed and that no repair
 * pass has committed yet: each gets a placeholder (`pending_repair`, truncated, no items)
 * in the same transaction, so the ended run's changes say they are incomplete until the
 * repair pass completes them (commit-change-batch.ts), exactly once.
 *
 * `notifySlotsAs` (a root run: this node's id) NOTIFYs the slots channel in the status
 * UPDATE itself, so the other nodes hear of the freed slot when the ending commits, with
 * no statement of its own (docs/decisions/0082). Only when a row was updated.
 */
export async function finishRun(
  db: Db,
  fence: RunFence,
  threadId: string,
  seq: number,
  ending: RunEnding,
  unrepaired: readonly ChangeBatch[] = [],
  notifySlotsAs?: string,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(agentRuns)
      .set({
        status: ending.status,
        error: ending.error ?? null,
        finishedAt: sql`now()`,
      })
      .where(fencedRun(fence))
      .returning({
        runId: agentRuns.runId,
        // RETURNING is evaluated per updated row: a fence that no longer holds sends none.
        ...(notifySlotsAs === undefined
          ? {}
          : {
              slots: sql<string>`pg_notify(${RUN_SLOTS_CHANNEL}::text, ${notifySlotsAs}::text)::text`,
            }),
      });
    if (row === undefined) return false;
    if (ending.status === "succeeded" && ending.finalText !== undefined) {
      await tx.insert(messages).values({
        uid: fence.uid,
        threadId,
        runId: fence.runId,
        role: "assistant",
        content: ending.finalText,
      });
    }
    if (unrepaired.length > 0) {
      await tx
        .insert(changeBatches)
        .values(
          unrepaired.map((b) => ({
            batchId: b.batchId,
            runId: b.runId,
            rootRunId: b.rootRunId,
            uid: b.uid,
            seq: b.seq,
            workdirPath: b.workdirPath,
            tool: b.tool,
            command: b.command,
            truncated: true,
            itemCount: 0,
            startedAt: new Date(b.startedAt),
            finishedAt: new Date(b.finishedAt),
            pendingRepair: true,
          })),
        )
        .onConflictDoNothing();
    }
    await insertTerminalEvent(tx, fence.runId, fence.uid, seq, ending);
    return true;
  });
}
