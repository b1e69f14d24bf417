import { sql } from "drizzle-orm";
import type { Db } from "../../../shared/db/client.ts";
import { changeBatches, changeBatchItems } from "../../../shared/db/schema.ts";
import { type HeldExecutionLease, releaseIn } from "../execution-lease/execution-leases.ts";
import type { ChangeBatch } from "./change-batch.ts";

/** Item rows per INSERT: 4 parameters each, far below PostgreSQL's 65535 per statement. */
const ITEM_ROWS_PER_INSERT = 2000;

export interface CommitOptions {
  /** Server-side bound on each statement (SET LOCAL statement_timeout). */
  readonly statementTimeoutMs: number;
  /** Released in the same transaction: the next command sees the batch before its turn. */
  readonly lease?: Pick<HeldExecutionLease, "leaseId" | "uid">;
  /** Written by a repair pass rather than by the command's own commit. */
  readonly repaired?: boolean;
}

/**
 * Commits one batch in one transaction: the batch row and all its items, or nothing.
 * Idempotent on `batchId`: a batch already there (an earlier commit whose answer was lost,
 * a second repair pass, another node repairing the same record) inserts nothing, so a fact
 * is never doubled. A placeholder left by a run that ended before its repair
 * (`pending_repair`) is completed exactly once. Returns whether this call wrote it.
 */
export async function commitChangeBatch(
  db: Db,
  batch: ChangeBatch,
  options: CommitOptions,
): Promise<"committed" | "already_committed"> {
  return db.transaction(async (tx) => {
    await tx.execute(
      sql`select set_config('statement_timeout', ${String(options.statementTimeoutMs)}, true)`,
    );
    const values = {
      batchId: batch.batchId,
      runId: batch.runId,
      rootRunId: batch.rootRunId,
      uid: batch.uid,
      seq: batch.seq,
      workdirPath: batch.workdirPath,
      tool: batch.tool,
      command: batch.command,
      truncated: batch.truncated,
      itemCount: batch.items.length,
      startedAt: new Date(batch.startedAt),
      finishedAt: new Date(batch.finishedAt),
      repaired: options.repaired ?? false,
      pendingRepair: false,
    };
    const { batchId: _key, ...update } = values;
    const written = await tx
      .insert(changeBatches)
      .values(values)
      .onConflictDoUpdate({
        target: changeBatches.batchId,
        set: update,
        setWhere: sql`${changeBatches.pendingRepair}`,
      })
      .returning({ batchId: changeBatches.batchId });
    if (written.length > 0) {
      for (let at = 0; at < batch.items.length; at += ITEM_ROWS_PER_INSERT) {
        const chunk = batch.items.slice(at, at + ITEM_ROWS_PER_INSERT);
        await tx
          .insert(changeBatchItems)
          .values(chunk.map((item) => ({ batchId: batch.batchId, ...item })))
          .onConflictDoNothing();
      }
    }
    if (options.lease !== undefined) await releaseIn(tx, options.lease);
    return written.length > 0 ? "committed" : "already_committed";
  });
}
