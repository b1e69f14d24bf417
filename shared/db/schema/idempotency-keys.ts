import { sql } from "drizzle-orm";
import { check, index, integer, jsonb, pgTable, primaryKey, text } from "drizzle-orm/pg-core";
import { createdAt, timestamptz } from "./columns.ts";

// Generic Idempotency-Key support for mutating POSTs other than run creation (which
// records its key on `requests`). Insert the row first (response_* NULL = in flight) with
// ON CONFLICT DO NOTHING; on conflict compare method, path and request_hash: a mismatch is
// a 409, a completed row replays response_status + response_body.
export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    uid: text("uid").notNull(),
    key: text("key").notNull(),
    method: text("method").notNull(),
    path: text("path").notNull(),
    requestHash: text("request_hash").notNull(),
    responseStatus: integer("response_status"),
    responseBody: jsonb("response_body").$type<unknown>(),
    createdAt: createdAt(),
    completedAt: timestamptz("completed_at"),
  },
  (t) => [
    primaryKey({ name: "idempotency_keys_pkey", columns: [t.uid, t.key] }),
    check(
      "idempotency_keys_response_check",
      sql`(${t.responseStatus} is null) = (${t.completedAt} is null) and (${t.responseStatus} is null or ${t.responseStatus} between 100 and 599)`,
    ),
    // Expiry sweep.
    index("idempotency_keys_created_idx").on(t.createdAt),
  ],
);

export type IdempotencyKey = typeof idempotencyKeys.$inferSelect;
export type NewIdempotencyKey = typeof idempotencyKeys.$inferInsert;
