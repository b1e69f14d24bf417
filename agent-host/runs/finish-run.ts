import { sql } from "drizzle-orm";
import type { TerminalRunStatus } from "../../shared/contracts/run.ts";
import type { Db, DbTransaction } from "../../shared/db/client.ts";
import { agentRuns, messages, type RunError, runEvents } from "../../shared/db/schema.ts";
import { RUN_EVENTS_CHANNEL } from "./run-channels.ts";
import { fencedRun, type RunFence } from "./run-fence.ts";

/** How a run ended, as the worker records it. */
export interface RunEnding {
  readonly status: TerminalRunStatus;
  /** Required when `failed`. */
  readonly error?: RunError;
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

/**
 * The `run.completed` event of an ending decided in `tx` (which holds the run row):
 * `seq` is the writer's next seq, or undefined to take max + 1 (the sweeper, which has
 * no event counter of its own; the row lock makes that safe).
 */
export async function insertTerminalEvent(
  tx: DbTransaction,
  runId: string,
  uid: string,
  seq: number | undefined,
  ending: Pick<RunEnding, "status" | "error">,
): Promise<void> {
  await tx.insert(runEvents).values({
    runId,
    uid,
    seq:
      seq ??
      sql`(select coalesce(max(${runEvents.seq}), 0) + 1 from ${runEvents} where ${runEvents.runId} = ${runId})`,
    type: "run.completed",
    data: { status: ending.status, ...(ending.error ? { error: ending.error } : {}) },
  });
  await tx.execute(sql`select pg_notify(${RUN_EVENTS_CHANNEL}::text, ${runId}::text)`);
}
