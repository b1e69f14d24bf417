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
 *
 * The NOTIFY's payload is the sending node's id: the sender wakes its own slots directly,
 * so its listener skips its own notifications (each would cost a fair-claim query).
 */
export async function parkRun(
  db: Db,
  runId: string,
  nodeId: string,
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
            -- The first delivery's context replaces the submission's (stored for the
            -- sweeper's re-send): the claim continues the queue hop, as before.
            trace_context = case when waiting_since is null
              then coalesce(${carrier}::jsonb, trace_context) else trace_context end
          where run_id = ${runId}::uuid and status = 'pending' and parent_run_id is null
          returning uid
        )
        select uid, pg_notify(${RUN_SLOTS_CHANNEL}::text, ${nodeId}::text) from parked`,
  );
  return row === undefined ? { ok: false } : { ok: true, uid: row.uid };
}

/**
 * Tells the workers of the other nodes that a root run of this node ended (a slot of its
 * uid is free): they may hold waiting runs of that uid that its limit kept back. The
 * payload is the sending node's id, as in parkRun.
 */
export async function notifySlotFreed(db: Db, nodeId: string): Promise<void> {
  await db.execute(sql`select pg_notify(${RUN_SLOTS_CHANNEL}::text, ${nodeId}::text)`);
}

/** Whether a slots-channel NOTIFY came from another node (ours have already woken us). */
export function fromOtherNode(payload: string, nodeId: string): boolean {
  return payload !== nodeId;
}
