import { sql } from "drizzle-orm";
import type { Db } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";

/** Runs of every tenant waiting for a person (the workcell_runs_awaiting_approval gauge). */
export async function countAwaitingRuns(db: Db, signal: AbortSignal): Promise<number> {
  signal.throwIfAborted();
  const [row] = await executeRows<{ n: number | string }>(
    db,
    sql`select count(*) as n from agent_runs where status = 'awaiting_approval'`,
  );
  return Number(row?.n ?? 0);
}
