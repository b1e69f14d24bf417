import { sql } from "drizzle-orm";
import { check, foreignKey, index, pgTable, text, unique, uuid } from "drizzle-orm/pg-core";
import { createdAt, enumCheck, timestamptz } from "./columns.ts";
import { projects } from "./projects.ts";

export const THREAD_STATUSES = ["active", "deleted"] as const;
export type ThreadStatus = (typeof THREAD_STATUSES)[number];

// Threads (the API name). root_thread_id is the runtime scope: every run in this thread
// gets runtime_scope_id = root_thread_id, so a whole tree of threads shares one sandbox.
export const conversations = pgTable(
  "conversations",
  {
    threadId: uuid("thread_id").primaryKey().defaultRandom(),
    uid: text("uid").notNull(),
    projectId: uuid("project_id").notNull(),
    parentThreadId: uuid("parent_thread_id"),
    // A root thread names itself; a child names its parent's root (enforced below).
    rootThreadId: uuid("root_thread_id").notNull(),
    title: text("title"),
    status: text("status", { enum: THREAD_STATUSES }).notNull().default("active"),
    deletedAt: timestamptz("deleted_at"),
    createdAt: createdAt(),
  },
  (t) => [
    unique("conversations_thread_id_uid_key").on(t.threadId, t.uid),
    // Target of agent_runs' scope link: a run's runtime_scope_id is its thread's root.
    unique("conversations_thread_scope_key").on(t.threadId, t.uid, t.rootThreadId),
    // Target of the parent link below.
    unique("conversations_thread_tree_key").on(t.threadId, t.uid, t.rootThreadId, t.projectId),
    foreignKey({
      name: "conversations_project_fk",
      columns: [t.projectId, t.uid],
      foreignColumns: [projects.id, projects.uid],
    }),
    // One composite link makes a child inherit its parent's uid, project and runtime
    // scope, so the API rules "a child inherits the parent's project" and "sub-threads
    // share the root's runtime scope" cannot be broken by a buggy writer.
    foreignKey({
      name: "conversations_parent_fk",
      columns: [t.parentThreadId, t.uid, t.rootThreadId, t.projectId],
      foreignColumns: [t.threadId, t.uid, t.rootThreadId, t.projectId],
    }),
    check(
      "conversations_root_check",
      sql`(${t.parentThreadId} is null) = (${t.rootThreadId} = ${t.threadId})`,
    ),
    enumCheck("conversations_status_check", t.status, THREAD_STATUSES),
    check(
      "conversations_deleted_check",
      sql`(${t.status} = 'deleted') = (${t.deletedAt} is not null)`,
    ),
    // GET /v1/threads: newest first, keyset cursor on (created_at, thread_id). Ascending
    // on purpose: scanned backwards it serves `ORDER BY created_at DESC, thread_id DESC`
    // exactly (drizzle-kit writes `DESC` as `DESC NULLS LAST`, which would not match).
    index("conversations_uid_created_idx").on(t.uid, t.createdAt, t.threadId),
    index("conversations_project_idx").on(t.projectId),
  ],
);

export type Conversation = typeof conversations.$inferSelect;
export type NewConversation = typeof conversations.$inferInsert;
