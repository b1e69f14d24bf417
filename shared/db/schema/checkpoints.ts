import { bigint, foreignKey, index, integer, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { createdAt, enumCheck, workdirPathCheck } from "./columns.ts";
import { conversations } from "./conversations.ts";

export const CHECKPOINT_SOURCES = ["manual", "run", "restore"] as const;
export type CheckpointSource = (typeof CHECKPOINT_SOURCES)[number];
export const CHECKPOINT_MODES = ["reflink", "copy"] as const;

/** Checkpoints a thread keeps when its user's limits say nothing (docs/decisions/0153). */
export const DEFAULT_MAX_CHECKPOINTS_PER_THREAD = 20;

// One immutable copy of a thread's Workdir (docs/architecture.md §16). The bytes are in
// `<data-root>/checkpoints/<uid dirname>/<checkpoint_id>/` of node `node_id`; a row exists
// only once its directory is whole (the agent-host inserts it after the rename), so the
// reconciler removes directories with no row and rows whose directory is gone. `bytes` is
// the logical size (regular files), what counts against the user's quota.
export const checkpoints = pgTable(
  "checkpoints",
  {
    checkpointId: uuid("checkpoint_id").primaryKey(),
    uid: text("uid").notNull(),
    threadId: uuid("thread_id").notNull(),
    runId: uuid("run_id"),
    label: text("label"),
    source: text("source", { enum: CHECKPOINT_SOURCES }).notNull(),
    workdirPath: text("workdir_path").notNull(),
    nodeId: text("node_id").notNull(),
    mode: text("mode", { enum: CHECKPOINT_MODES }).notNull(),
    files: integer("files").notNull(),
    dirs: integer("dirs").notNull(),
    bytes: bigint("bytes", { mode: "number" }).notNull(),
    skipped: integer("skipped").notNull(),
    // The store directory holding the bytes when it is an earlier checkpoint's (the Workdir
    // had not changed since that one: decision 0171); null: `checkpoint_id` itself. A
    // directory lives while any row names it.
    storeId: uuid("store_id"),
    createdAt: createdAt(),
  },
  (t) => [
    foreignKey({
      name: "checkpoints_thread_fk",
      columns: [t.threadId, t.uid],
      foreignColumns: [conversations.threadId, conversations.uid],
    }).onDelete("cascade"),
    enumCheck("checkpoints_source_check", t.source, CHECKPOINT_SOURCES),
    enumCheck("checkpoints_mode_check", t.mode, CHECKPOINT_MODES),
    workdirPathCheck("checkpoints_workdir_path_check", t.workdirPath),
    index("checkpoints_thread_created_idx").on(t.threadId, t.createdAt),
    index("checkpoints_uid_idx").on(t.uid),
    index("checkpoints_store_idx").on(t.storeId),
  ],
);

export type CheckpointRow = typeof checkpoints.$inferSelect;
