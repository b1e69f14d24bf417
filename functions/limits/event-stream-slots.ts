import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";
import { eventStreamSlots } from "../../shared/db/schema.ts";

/**
 * Open event streams per uid, counted in Postgres (a stream may be served by any instance
 * of any runtime). Opening takes a slot if fewer than `max` unexpired ones exist, under
 * an advisory lock of the uid so two opens cannot both take the last one; closing deletes
 * it. A slot outlives its stream only if the instance died: it lapses at `ttlMs` (longer
 * than any stream may last).
 */
export async function openEventStreamSlot(
  db: Db,
  uid: string,
  max: number,
  ttlMs: number,
): Promise<string | undefined> {
  return db.transaction(async (tx) => {
    await tx.execute(
      sql`select pg_advisory_xact_lock(hashtextextended(${`workcell.event-streams:${uid}`}, 0))`,
    );
    // Lapsed slots of this uid go while we hold its lock, in the same statement (the
    // count ignores them either way).
    const [row] = await executeRows<{ stream_id: string }>(
      tx,
      sql`with lapsed as (
            delete from event_stream_slots where uid = ${uid} and expires_at <= now()
          )
          insert into event_stream_slots (uid, expires_at)
          select ${uid}, now() + ${ttlMs}::bigint * interval '1 millisecond'
          where (select count(*) from event_stream_slots
                 where uid = ${uid} and expires_at > now()) < ${max}::int
          returning stream_id`,
    );
    return row?.stream_id;
  });
}

export async function closeEventStreamSlot(db: Db, uid: string, streamId: string): Promise<void> {
  await db
    .delete(eventStreamSlots)
    .where(and(eq(eventStreamSlots.streamId, streamId), eq(eventStreamSlots.uid, uid)));
}
