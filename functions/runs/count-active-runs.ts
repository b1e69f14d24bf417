import { sql } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";

export type ActiveRunCounts = { readonly running: number; readonly queued: number };

/**
 * `uid`'s root runs running and waiting to start, in one statement. Root runs only, as
 * `max_concurrent_runs` and the queued-runs bound count them (sub-agent runs belong to
 * their root's slot).
 */
export async function countActiveRuns(db: DbOrTransaction, uid: string): Promise<ActiveRunCounts> {
  const [row] = await executeRows<{ running: number; queued: number }>(
    db,
    sql`select count(*) filter (where status = 'running')::int as running,
               count(*) filter (where status = 'pending')::int as queued
        from agent_runs
        where uid = ${uid} and status in ('running', 'pending') and parent_run_id is null`,
  );
  return { running: row?.running ?? 0, queued: row?.queued ?? 0 };
}
