import { sql } from "drizzle-orm";
import type { Db, DbOrTransaction } from "../../../shared/db/client.ts";
import {
  executePreparedStatement,
  prepareStatement,
} from "../../../shared/db/execute-prepared-rows.ts";
import { changeBatches } from "../../../shared/db/schema.ts";
import {
  type TerminalEnding,
  terminalEventData,
} from "../../../shared/runs/insert-terminal-event.ts";
import { RUN_EVENTS_CHANNEL, RUN_SLOTS_CHANNEL } from "../../../shared/runs/run-channels.ts";
import type { ChangeBatch } from "../change-batch/change-batch.ts";
import type { RunFence } from "./run-fence.ts";

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
  const finish = (on: DbOrTransaction) =>
    finishStatement(on, fence, threadId, seq, ending, notifySlotsAs);
  // Almost every run has no unrepaired batch: its ending is one statement, no transaction.
  if (unrepaired.length === 0) return finish(db);
  return db.transaction(async (tx) => {
    if (!(await finish(tx))) return false;
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
    return true;
  });
}

const value = (name: string) => sql.placeholder(name);

/**
 * The fenced status update, the final message, the terminal event and both NOTIFYs as
 * one statement: each data-modifying CTE reads `run`, so a fence that no longer holds
 * (no row updated) writes nothing at all. Rendered once and run as a named statement:
 * one round trip where the transaction took six, several of them unnamed (two round
 * trips each and planned every time: docs/decisions/0087, 0183).
 */
const FINISH_RUN = prepareStatement(
  "finish_run",
  sql`with run as (
        update agent_runs
        set status = ${value("status")}::text, error = ${value("error")}::jsonb, finished_at = now()
        where run_id = ${value("run_id")}::uuid and attempt = ${value("attempt")}::int
          and status = 'running'
        returning run_id,
          -- Per updated row (none when the fence failed); only for a root run.
          case when ${value("notify_slots")}::text is not null
            then pg_notify(${value("slots_channel")}::text, ${value("notify_slots")}::text)::text
          end as slots
      ), message as (
        insert into messages (uid, thread_id, run_id, role, content)
        select ${value("uid")}::text, ${value("thread_id")}::uuid, run.run_id, 'assistant',
               ${value("final_text")}::text
        from run where ${value("final_text")}::text is not null
      ), event as (
        insert into run_events (run_id, uid, seq, type, data)
        select run.run_id, ${value("uid")}::text, ${value("seq")}::int, 'run.completed',
               ${value("event_data")}::jsonb
        from run
      )
      select run_id, pg_notify(${value("events_channel")}::text, run_id::text) from run`,
);

async function finishStatement(
  db: DbOrTransaction,
  fence: RunFence,
  threadId: string,
  seq: number,
  ending: RunEnding,
  notifySlotsAs: string | undefined,
): Promise<boolean> {
  const rows = await executePreparedStatement<{ run_id: string }>(db, FINISH_RUN, {
    status: ending.status,
    error: ending.error === undefined ? null : JSON.stringify(ending.error),
    run_id: fence.runId,
    attempt: fence.attempt,
    notify_slots: notifySlotsAs ?? null,
    slots_channel: RUN_SLOTS_CHANNEL,
    uid: fence.uid,
    thread_id: threadId,
    final_text:
      ending.status === "succeeded" && ending.finalText !== undefined ? ending.finalText : null,
    seq,
    event_data: JSON.stringify(terminalEventData(ending)),
    events_channel: RUN_EVENTS_CHANNEL,
  });
  return rows.length === 1;
}
