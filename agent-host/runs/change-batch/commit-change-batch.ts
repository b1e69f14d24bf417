import { sql } from "drizzle-orm";
import type { Db } from "../../../shared/db/client.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import type { HeldExecutionLease } from "../execution-lease/execution-leases.ts";
import { EXECUTION_LEASE_CHANNEL } from "../execution-lease/lease-wakeups.ts";
import type { ChangeBatch } from "./change-batch.ts";

export interface CommitOptions {
  /** Released in the same statement: the next command sees the batch before its turn. */
  readonly lease?: Pick<HeldExecutionLease, "leaseId" | "uid">;
  /** Written by a repair pass rather than by the command's own commit. */
  readonly repaired?: boolean;
}

/**
 * Commits one batch atomically: the batch row and all its items, or nothing (one
 * statement, bounded by the connection's statement_timeout, DB_STATEMENT_TIMEOUT_SECONDS).
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
  // One statement, so one round trip and atomic on its own (docs/decisions/0036): the
  // batch row (idempotent; a pending placeholder is completed), its items only when this
  // statement wrote the row, and the lease release (NOTIFY is delivered at commit). The
  // items' foreign key is checked at the end of the statement, after the row exists.
  const items = JSON.stringify(
    batch.items.map((i) => ({ path: i.path, change: i.change, size: i.size })),
  );
  const leaseId = options.lease?.leaseId ?? null;
  const rows = await executeRows<{ written: number }>(
    db,
    sql`
    with batch as (
      insert into change_batches (batch_id, run_id, root_run_id, uid, seq, workdir_path, tool,
        command, truncated, item_count, started_at, finished_at, repaired, pending_repair)
      values (${batch.batchId}::uuid, ${batch.runId}::uuid, ${batch.rootRunId}::uuid, ${batch.uid},
        ${batch.seq}::int, ${batch.workdirPath}, ${batch.tool}, ${batch.command},
        ${batch.truncated}, ${batch.items.length}::int, ${batch.startedAt}::timestamptz,
        ${batch.finishedAt}::timestamptz, ${options.repaired ?? false}, false)
      on conflict (batch_id) do update set
        run_id = excluded.run_id, root_run_id = excluded.root_run_id, uid = excluded.uid,
        seq = excluded.seq, workdir_path = excluded.workdir_path, tool = excluded.tool,
        command = excluded.command, truncated = excluded.truncated,
        item_count = excluded.item_count, started_at = excluded.started_at,
        finished_at = excluded.finished_at, repaired = excluded.repaired,
        pending_repair = false
      where change_batches.pending_repair
      returning batch_id),
    items as (
      insert into change_batch_items (batch_id, path, change, size)
      select b.batch_id, i.path, i.change, i.size
      from batch b, jsonb_to_recordset(${items}::jsonb) as i(path text, change text, size bigint)
      on conflict do nothing),
    released as (
      delete from execution_leases where lease_id = ${leaseId}::uuid returning uid),
    notified as (
      select pg_notify(${EXECUTION_LEASE_CHANNEL}, uid) from released)
    select (select count(*)::int from batch) as written, (select count(*) from notified) as n`,
  );
  return rows[0]?.written === 1 ? "committed" : "already_committed";
}
