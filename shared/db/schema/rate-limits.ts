import { doublePrecision, index, integer, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { timestamptz } from "./columns.ts";

// The API's per-uid token bucket (requests_per_minute, docs/decisions/0037): `tokens` as of
// `refilled_at`; `last_granted` is what the last take handed out (RETURNING sees only the
// new row, so the statement records it here). Not tenant-linked: any authenticated uid.
export const apiRateBuckets = pgTable("api_rate_buckets", {
  uid: text("uid").primaryKey(),
  tokens: doublePrecision("tokens").notNull(),
  refilledAt: timestamptz("refilled_at").notNull(),
  lastGranted: integer("last_granted").notNull().default(0),
});

// One row per open event stream of a uid; a stream that ends deletes its row, one whose
// instance died lapses at `expires_at` (after the longest a stream may last).
export const eventStreamSlots = pgTable(
  "event_stream_slots",
  {
    streamId: uuid("stream_id").primaryKey().defaultRandom(),
    uid: text("uid").notNull(),
    expiresAt: timestamptz("expires_at").notNull(),
  },
  (t) => [index("event_stream_slots_uid_idx").on(t.uid, t.expiresAt)],
);
