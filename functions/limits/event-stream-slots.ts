import { sql } from "drizzle-orm";
import type { Db } from "../../shared/db/client.ts";
import {
  executePreparedStatement,
  prepareStatement,
} from "../../shared/db/execute-prepared-rows.ts";

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
    await executePreparedStatement(tx, LOCK_UID_STREAMS, {
      key: `workcell.event-streams:${uid}`,
    });
    const [row] = await executePreparedStatement<{ stream_id: string }>(tx, TAKE_SLOT, {
      uid,
      ttl_ms: ttlMs,
      max,
    });
    return row?.stream_id;
  });
}

export async function closeEventStreamSlot(db: Db, uid: string, streamId: string): Promise<void> {
  await executePreparedStatement(db, FREE_SLOT, { stream_id: streamId, uid });
}

// Every event stream opens and closes a slot: rendered once, and as named statements
// parsed and planned once per connection, one round trip each (docs/decisions/0087, 0183).
const value = (name: string) => sql.placeholder(name);
const LOCK_UID_STREAMS = prepareStatement(
  "event_streams_lock",
  sql`select pg_advisory_xact_lock(hashtextextended(${value("key")}::text, 0))`,
);
// Lapsed slots of this uid go while we hold its lock, in the same statement (the count
// ignores them either way).
const TAKE_SLOT = prepareStatement(
  "event_stream_slot_take",
  sql`with lapsed as (
        delete from event_stream_slots where uid = ${value("uid")}::text and expires_at <= now()
      )
      insert into event_stream_slots (uid, expires_at)
      select ${value("uid")}::text, now() + ${value("ttl_ms")}::bigint * interval '1 millisecond'
      where (select count(*) from event_stream_slots
             where uid = ${value("uid")}::text and expires_at > now()) < ${value("max")}::int
      returning stream_id`,
);
const FREE_SLOT = prepareStatement(
  "event_stream_slot_free",
  sql`delete from event_stream_slots where stream_id = ${value("stream_id")}::uuid and uid = ${value("uid")}::text`,
);
