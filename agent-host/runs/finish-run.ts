import { sql } from "drizzle-orm";
import type { Db } from "../../shared/db/client.ts";
import { agentRuns, messages } from "../../shared/db/schema.ts";
import {
  insertTerminalEvent,
  type TerminalEnding,
} from "../../shared/runs/insert-terminal-event.ts";
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
 */
export async function finishRun(
  db: Db,
  fence: RunFence,
  threadId: string,
  seq: number,
  ending: RunEnding,
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
      .returning({ runId: agentRuns.runId });
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
    await insertTerminalEvent(tx, fence.runId, fence.uid, seq, ending);
    return true;
  });
}
