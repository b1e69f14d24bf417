import { sql } from "drizzle-orm";
import type { PgTableExtraConfigValue } from "drizzle-orm/pg-core";
import { foreignKey, index, pgTable, text, unique, uuid } from "drizzle-orm/pg-core";
import { agentRuns } from "./agent-runs.ts";
import { createdAt, enumCheck } from "./columns.ts";
import { conversations } from "./conversations.ts";

export const MESSAGE_ROLES = ["user", "assistant", "system", "tool"] as const;
export type MessageRole = (typeof MESSAGE_ROLES)[number];

// Stored messages keep the user's original text; the model-visible variant (with the
// attachment list) is built per run and not stored here.
export const messages = pgTable(
  "messages",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    uid: text("uid").notNull(),
    threadId: uuid("thread_id").notNull(),
    // Set on messages a run produced. The user message that started a run is linked to
    // it through requests.message_id instead, because it is written before the run.
    runId: uuid("run_id"),
    role: text("role", { enum: MESSAGE_ROLES }).notNull(),
    content: text("content").notNull(),
    createdAt: createdAt(),
  },
  // Annotated: messages -> agent_runs -> requests -> messages reference each other, and
  // TypeScript cannot infer a table type through that cycle.
  (t): PgTableExtraConfigValue[] => [
    unique("messages_id_thread_uid_key").on(t.id, t.threadId, t.uid),
    foreignKey({
      name: "messages_thread_fk",
      columns: [t.threadId, t.uid],
      foreignColumns: [conversations.threadId, conversations.uid],
    }),
    foreignKey({
      name: "messages_run_fk",
      columns: [t.runId, t.uid],
      foreignColumns: [agentRuns.runId, agentRuns.uid],
    }),
    enumCheck("messages_role_check", t.role, MESSAGE_ROLES),
    index("messages_thread_created_idx").on(t.threadId, t.createdAt, t.id),
    // Partial: a run's own messages only. The user message that starts a run has no run_id
    // and is never looked up by it, so a submission adds no entry here (0089).
    index("messages_run_idx").on(t.runId).where(sql`${t.runId} is not null`),
  ],
);

export type Message = typeof messages.$inferSelect;
export type NewMessage = typeof messages.$inferInsert;
