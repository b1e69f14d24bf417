import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  foreignKey,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uuid,
} from "drizzle-orm/pg-core";
import { agentRuns } from "./agent-runs.ts";
import { createdAt, enumCheck, timestamptz } from "./columns.ts";
import { RUN_CHANGE_KINDS } from "./run-changes.ts";

export const CHANGE_BATCH_TOOLS = ["bash", "shell", "write_file"] as const;
export type ChangeBatchTool = (typeof CHANGE_BATCH_TOOLS)[number];

/** Most characters of a command kept with its batch (the rest is cut, not the batch). */
export const MAX_BATCH_COMMAND_CHARS = 2000;
/** Most file facts stored for one batch; past it the batch is marked truncated. */
export const MAX_BATCH_ITEMS = 10_000;

// One change batch per command a run executed under its Execution Lease
// (docs/decisions/0014): what the command added, modified or deleted in its writable root
// (the Workdir), from a metadata snapshot before it and a no-follow scan after it,
// committed in one transaction. `batch_id` is chosen by the agent-host before the commit,
// so a repair pass that commits a kept batch again (the first commit's answer was lost)
// inserts nothing twice. `root_run_id` is the execution tree's root run: a root run's
// changes are the union of its own and its sub-agents' batches. `seq` orders the batches
// of one root run (the agent-host's order of the commands, which the lease serialises).
export const changeBatches = pgTable(
  "change_batches",
  {
    batchId: uuid("batch_id").primaryKey(),
    runId: uuid("run_id").notNull(),
    rootRunId: uuid("root_run_id").notNull(),
    uid: text("uid").notNull(),
    seq: integer("seq").notNull(),
    workdirPath: text("workdir_path").notNull(),
    tool: text("tool", { enum: CHANGE_BATCH_TOOLS }).notNull(),
    command: text("command").notNull(),
    // True when the item list is not the command's whole effect: a snapshot hit a bound
    // (entries, depth, time), a name could not be reported, or MAX_BATCH_ITEMS was reached.
    truncated: boolean("truncated").notNull(),
    itemCount: integer("item_count").notNull(),
    startedAt: timestamptz("started_at").notNull(),
    finishedAt: timestamptz("finished_at").notNull(),
    // True when a repair pass, not the command's own commit, wrote the batch.
    repaired: boolean("repaired").notNull().default(false),
    // A placeholder the run's ending wrote for a batch whose commit had failed and was not
    // repaired yet (its facts are on the node's disk): the run's changes say truncated
    // until the repair pass completes it (exactly once) and clears this.
    pendingRepair: boolean("pending_repair").notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [
    foreignKey({
      name: "change_batches_run_fk",
      columns: [t.runId, t.uid],
      foreignColumns: [agentRuns.runId, agentRuns.uid],
    }),
    foreignKey({
      name: "change_batches_root_run_fk",
      columns: [t.rootRunId, t.uid],
      foreignColumns: [agentRuns.runId, agentRuns.uid],
    }),
    enumCheck("change_batches_tool_check", t.tool, CHANGE_BATCH_TOOLS),
    check(
      "change_batches_command_check",
      sql`char_length(${t.command}) <= ${sql.raw(String(MAX_BATCH_COMMAND_CHARS))}`,
    ),
    check("change_batches_counts_check", sql`${t.itemCount} >= 0 and ${t.seq} >= 0`),
    check(
      "change_batches_pending_check",
      sql`not ${t.pendingRepair} or (${t.truncated} and ${t.itemCount} = 0)`,
    ),
    index("change_batches_root_idx").on(t.rootRunId, t.seq),
    index("change_batches_run_idx").on(t.runId, t.seq),
  ],
);

// The file facts of one batch. Paths are Workdir-relative, as the workspace layer
// addresses them; only regular files.
export const changeBatchItems = pgTable(
  "change_batch_items",
  {
    batchId: uuid("batch_id")
      .notNull()
      .references(() => changeBatches.batchId),
    path: text("path").notNull(),
    change: text("change", { enum: RUN_CHANGE_KINDS }).notNull(),
    // Bytes after the command; NULL exactly for a deleted file.
    size: bigint("size", { mode: "number" }),
  },
  (t) => [
    primaryKey({ name: "change_batch_items_pkey", columns: [t.batchId, t.path] }),
    enumCheck("change_batch_items_change_check", t.change, RUN_CHANGE_KINDS),
    check(
      "change_batch_items_size_check",
      sql`(${t.change} = 'deleted') = (${t.size} is null) and (${t.size} is null or ${t.size} >= 0)`,
    ),
    check(
      "change_batch_items_path_check",
      sql`char_length(${t.path}) between 1 and 4096 and ${t.path} !~ '^/'`,
    ),
  ],
);

export type ChangeBatchRow = typeof changeBatches.$inferSelect;
export type ChangeBatchItemRow = typeof changeBatchItems.$inferSelect;
