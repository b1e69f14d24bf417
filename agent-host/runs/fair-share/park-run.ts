import { sql } from "drizzle-orm";
import type { Db } from "../../../shared/db/client.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { RUN_SLOTS_CHANNEL } from "../../../shared/runs/run-channels.ts";

export type ParkOutcome =
  | { readonly ok: true; readonly uid: string }
  /** Unknown, not pending (a duplicate delivery, a finished run) or a sub-agent run. */
  | { readonly ok: false };

/**
 * Takes over a dispatched run's place in line: the run stays `pending` and gets
 * `waiting_since` (kept when already set, so a duplicate delivery does not move it to
 * the back), and a NOTIFY on the slots channel tells every worker with a free slot. The
 * caller deletes the message afterwards: from here the run waits in Postgres, where the
 * fair claim (claim-waiting-run.ts) can see every uid's queue at once. A duplicate
 * message finds the run already waiting (harmless) or no longer pending (dropped).
 */
export async function parkRun(
  db: Db,
  runId: string,
  /** The delivery's W3C trace context; kept from the first delivery, like its place. */
  traceCarrier?: Readonly<Record<string, string>>,
): Promise<ParkOutcome> {
  const carrier =
    traceCarrier === undefined || Object.keys(traceCarrier).length === 0
      ? null
      : JSON.stringify(traceCarrier);
  const [row] = await executeRows<{ uid: string }>(
    db,
    sql`with parked as (
          update agent_runs set waiting_since = coalesce(waiting_since, clock_timestamp()),
            trace_context = coalesce(trace_context, ${carrier}::jsonb)
          where run_id = ${runId}::uuid and status = 'pending' and parent_run_id is null
          returning uid
        )
        select uid, pg_notify(${RUN_SLOTS_CHANNEL}::text, uid) from parked`,
  );
  return row === undefined ? { ok: false } : { ok: true, uid: row.uid };
}

/** Tells the workers of every node that a slot of `uid` is free (a root run ended). */
export async function notifySlotFreed(db: Db, uid: string): Promise<void> {
  await db.execute(sql`select pg_notify(${RUN_SLOTS_CHANNEL}::text, ${uid}::text)`);
}
