import { sql } from "drizzle-orm";
import type { PgTableExtraConfigValue } from "drizzle-orm/pg-core";
import { check, foreignKey, pgTable, text, unique, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { createdAt } from "./columns.ts";
import { messages } from "./messages.ts";

// The user's request that produced a run (POST /v1/threads/{id}/runs, POST /v1/runs).
// idempotency_key + request_hash implement the Idempotency-Key rule for run creation:
// the same key with the same body returns the original run, another body is a 409.
// Only requests with a key are in the key's unique index (partial): a request without one
// never clashes and costs no index entry (docs/decisions/0089).
export const requests = pgTable(
  "requests",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    uid: text("uid").notNull(),
    threadId: uuid("thread_id").notNull(),
    messageId: uuid("message_id").notNull(),
    idempotencyKey: text("idempotency_key"),
    // Hash of the canonical request body, compared on an idempotent replay; only a request
    // with a key can be replayed, so one without may leave it NULL (see the check below).
    requestHash: text("request_hash"),
    createdAt: createdAt(),
  },
  // Annotated: messages -> agent_runs -> requests -> messages reference each other, and
  // TypeScript cannot infer a table type through that cycle.
  (t): PgTableExtraConfigValue[] => [
    uniqueIndex("requests_uid_idempotency_key_key")
      .on(t.uid, t.idempotencyKey)
      .where(sql`${t.idempotencyKey} is not null`),
    check("requests_hash_check", sql`${t.idempotencyKey} is null or ${t.requestHash} is not null`),
    // Target for agent_runs and attachments: same uid and same thread as the request.
    unique("requests_id_thread_uid_key").on(t.id, t.threadId, t.uid),
    // The message must belong to the same thread and uid as the request. That also puts
    // the request in a thread of its uid (messages_thread_fk), so no separate link to
    // conversations is kept: one foreign-key check less per submission (0089).
    foreignKey({
      name: "requests_message_fk",
      columns: [t.messageId, t.threadId, t.uid],
      foreignColumns: [messages.id, messages.threadId, messages.uid],
    }),
  ],
);

export type RunRequest = typeof requests.$inferSelect;
export type NewRunRequest = typeof requests.$inferInsert;
