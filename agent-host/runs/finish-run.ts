import { sql } from "drizzle-orm";
import type { Db } from "../../shared/db/client.ts";
import { agentRuns, messages, runChangeSets, runChanges } from "../../shared/db/schema.ts";
import {
  insertTerminalEvent,
  type TerminalEnding,
} from "../../shared/runs/insert-terminal-event.ts";
import { fencedRun, type RunFence } from "./run-fence.ts";
import type { WorkdirChanges } from "./workdir-changes.ts";

/** Change rows per INSERT: 5 parameters each, far below PostgreSQL's 65535 per statement. */
const CHANGE_ROWS_PER_INSERT = 1000;

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
 * `changes` (root runs that executed) are the files the run changed in its Workdir; they
 * commit with the ending, so GET /v1/runs/{id}/changes of a finished run never shows a
 * half-written list, and a worker that lost its lease records none.
 */
export async function finishRun(
  db: Db,
  fence: RunFence,
  threadId: string,
  seq: number,
  ending: RunEnding,
  changes?: WorkdirChanges,
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
    if (changes !== undefined) {
      await tx
        .insert(runChangeSets)
        .values({ runId: fence.runId, uid: fence.uid, truncated: changes.truncated });
      for (let at = 0; at < changes.items.length; at += CHANGE_ROWS_PER_INSERT) {
        const chunk = changes.items.slice(at, at + CHANGE_ROWS_PER_INSERT);
        await tx
          .insert(runChanges)
          .values(chunk.map((c) => ({ runId: fence.runId, uid: fence.uid, ...c })));
      }
    }
    await insertTerminalEvent(tx, fence.runId, fence.uid, seq, ending);
    return true;
  });
}
