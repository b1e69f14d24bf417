import type { PgTableExtraConfigValue } from "drizzle-orm/pg-core";
import { foreignKey, pgTable, text, unique, uuid } from "drizzle-orm/pg-core";
import { createdAt } from "./columns.ts";
import { conversations } from "./conversations.ts";
import { messages } from "./messages.ts";

// The user's request that produced a run (POST /v1/threads/{id}/runs, POST /v1/runs).
// idempotency_key + request_hash implement the Idempotency-Key rule for run creation:
// the same key with the same body returns the original run, another body is a 409.
// NULL keys are distinct in a unique constraint, so requests without a key never clash.
export const requests = pgTable(
  "requests",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    uid: text("uid").notNull(),
    threadId: uuid("thread_id").notNull(),
    messageId: uuid("message_id").notNull(),
    idempotencyKey: text("idempotency_key"),
    // Hash of the canonical request body, compared on an idempotent replay.
    requestHash: text("request_hash").notNull(),
    createdAt: createdAt(),
  },
  // Annotated: messages -> agent_runs -> requests -> messages reference each other, and
  // TypeScript cannot infer a table type through that cycle.
  (t): PgTableExtraConfigValue[] => [
    unique("requests_uid_idempotency_key_key").on(t.uid, t.idempotencyKey),
    // Target for agent_runs and attachments: same uid and same thread as the request.
    unique("requests_id_thread_uid_key").on(t.id, t.threadId, t.uid),
    foreignKey({
      name: "requests_thread_fk",
      columns: [t.threadId, t.uid],
      foreignColumns: [conversations.threadId, conversations.uid],
    }),
    // The message must belong to the same thread and uid as the request.
    foreignKey({
      name: "requests_message_fk",
      columns: [t.messageId, t.threadId, t.uid],
      foreignColumns: [messages.id, messages.threadId, messages.uid],
    }),
  ],
);

export type RunRequest = typeof requests.$inferSelect;
export type NewRunRequest = typeof requests.$inferInsert;
