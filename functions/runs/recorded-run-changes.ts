import { type SQL, sql } from "drizzle-orm";
import {
  isTerminalRunStatus,
  MAX_LISTED_CHANGE_BATCHES,
  type RunChange,
  type RunChangeBatch,
} from "../../shared/contracts/run.ts";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";
import { MAX_BATCH_ITEMS, MAX_RUN_CHANGES_PER_RUN } from "../../shared/db/schema.ts";
import { isoTime } from "../db/iso-time.ts";
import type { RunChangesSource } from "./run-changes.ts";

/** Most files in one answer (the endpoint is unpaged); past it `truncated` is set. */
const MAX_LISTED_ITEMS = MAX_BATCH_ITEMS;

interface BatchRow {
  batch_id: string;
  run_id: string;
  seq: number;
  tool: RunChangeBatch["tool"];
  command: string;
  started_at: Date | string;
  finished_at: Date | string;
  item_count: number;
  truncated: boolean;
  pending_repair: boolean;
}

interface NetRow {
  path: string;
  first_change: RunChange["change"];
  last_change: RunChange["change"];
  size: number | string | null;
}

/**
 * The union of the change batches of a run: for a root run, every batch of its execution
 * tree (its sub-agents share its Workdir); for a sub-agent run, its own. Per path the net
 * effect over the batches in order: first seen `added` and last `deleted` is no change,
 * first `added` is added, last `deleted` is deleted, otherwise modified (with the last
 * size). `truncated` is true whenever the list may be incomplete (docs/api.md): the run has not
 * ended, a batch hit a scan bound or still awaits repair, or a list was cut at its bound.
 * Never an empty list that hides changes.
 *
 * Runs recorded before change batches (run_changes, one set per run at its end) are read
 * from there. Tenant-scoped by uid like every query; paths sorted in byte order.
 */
export function recordedRunChanges(db: DbOrTransaction): RunChangesSource {
  return {
    async listChanges(run, signal, options = {}) {
      signal.throwIfAborted();
      const ofRun = sql`b.uid = ${run.uid} and (b.run_id = ${run.runId} or b.root_run_id = ${run.runId})`;
      const where =
        options.batchId === undefined ? ofRun : sql`${ofRun} and b.batch_id = ${options.batchId}`;
      const batches = await executeRows<BatchRow>(
        db,
        sql`select b.batch_id, b.run_id, b.seq, b.tool, b.command, b.started_at, b.finished_at,
                   b.item_count, b.truncated, b.pending_repair
            from change_batches b where ${where}
            order by b.seq, b.created_at limit ${MAX_LISTED_CHANGE_BATCHES + 1}`,
      );
      if (options.batchId !== undefined && batches.length === 0) return undefined;
      const running = !isTerminalRunStatus(run.status);
      if (batches.length === 0) return legacyChanges(db, run, running);
      const listed = batches.slice(0, MAX_LISTED_CHANGE_BATCHES);
      const net = await netChanges(db, where);
      const items = net.flatMap(netChangeOf).slice(0, MAX_LISTED_ITEMS);
      const truncated =
        running ||
        batches.length > MAX_LISTED_CHANGE_BATCHES ||
        net.length > MAX_LISTED_ITEMS ||
        batches.some((b) => b.truncated || b.pending_repair);
      return { items, truncated, batches: listed.map(batchBody) };
    },
  };
}

function netChanges(db: DbOrTransaction, where: SQL): Promise<NetRow[]> {
  return executeRows<NetRow>(
    db,
    sql`with i as (
          select i.path, i.change, i.size, b.seq
          from change_batch_items i join change_batches b on b.batch_id = i.batch_id
          where ${where}
        ),
        firsts as (select distinct on (path) path, change from i order by path, seq asc),
        lasts as (select distinct on (path) path, change, size from i order by path, seq desc)
        select l.path, f.change as first_change, l.change as last_change, l.size
        from lasts l join firsts f on f.path = l.path
        order by l.path collate "C"
        limit ${MAX_LISTED_ITEMS + 1}`,
  );
}

function netChangeOf(row: NetRow): RunChange[] {
  const size = row.size === null ? null : Number(row.size);
  if (row.first_change === "added" && row.last_change === "deleted") return [];
  if (row.last_change === "deleted") return [{ path: row.path, change: "deleted", size: null }];
  if (row.first_change === "added") return [{ path: row.path, change: "added", size }];
  return [{ path: row.path, change: "modified", size }];
}

function batchBody(row: BatchRow): RunChangeBatch {
  return {
    batch_id: row.batch_id,
    run_id: row.run_id,
    seq: Number(row.seq),
    tool: row.tool,
    command: row.command,
    started_at: isoTime(new Date(row.started_at)),
    finished_at: isoTime(new Date(row.finished_at)),
    item_count: Number(row.item_count),
    truncated: row.truncated,
    pending_repair: row.pending_repair,
  };
}

/** A run from before change batches: its one recorded set, if any. */
async function legacyChanges(
  db: DbOrTransaction,
  run: { runId: string; uid: string },
  running: boolean,
) {
  const [set] = await executeRows<{ truncated: boolean }>(
    db,
    sql`select truncated from run_change_sets where run_id = ${run.runId} and uid = ${run.uid}`,
  );
  const rows =
    set === undefined
      ? []
      : await executeRows<{
          path: string;
          change: RunChange["change"];
          size: number | string | null;
        }>(
          db,
          sql`select path, change, size from run_changes
              where run_id = ${run.runId} and uid = ${run.uid}
              order by path collate "C" limit ${MAX_RUN_CHANGES_PER_RUN}`,
        );
  return {
    items: rows.map((r) => ({ ...r, size: r.size === null ? null : Number(r.size) })),
    truncated: running || (set?.truncated ?? false),
    batches: [],
  };
}
