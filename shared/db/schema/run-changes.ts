import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  foreignKey,
  pgTable,
  primaryKey,
  text,
  uuid,
} from "drizzle-orm/pg-core";
import { agentRuns } from "./agent-runs.ts";
import { createdAt, enumCheck } from "./columns.ts";

export const RUN_CHANGE_KINDS = ["added", "modified", "deleted"] as const;
export type RunChangeKind = (typeof RUN_CHANGE_KINDS)[number];

/**
 * Most file changes stored for one run. GET /v1/runs/{id}/changes is unpaged (docs/api.md), so
 * this bounds its answer as well as the finishing transaction; the writer keeps the first
 * ones by path and marks the set truncated.
 */
export const MAX_RUN_CHANGES_PER_RUN = 10_000;

// Files a root run changed in its Workdir (GET /v1/runs/{id}/changes), written by the run
// worker in the transaction that ends the run (fenced by its attempt), from a snapshot of
// the Workdir before and after the execution tree ran. Only regular files; paths are
// Workdir-relative, as the workspace layer addresses them.
export const runChanges = pgTable(
  "run_changes",
  {
    runId: uuid("run_id").notNull(),
    uid: text("uid").notNull(),
    path: text("path").notNull(),
    change: text("change", { enum: RUN_CHANGE_KINDS }).notNull(),
    // Bytes after the run; NULL exactly for a deleted file.
    size: bigint("size", { mode: "number" }),
  },
  (t) => [
    primaryKey({ name: "run_changes_pkey", columns: [t.runId, t.path] }),
    // Tenant-safe: a change belongs to a run of the same uid.
    foreignKey({
      name: "run_changes_run_fk",
      columns: [t.runId, t.uid],
      foreignColumns: [agentRuns.runId, agentRuns.uid],
    }),
    enumCheck("run_changes_change_check", t.change, RUN_CHANGE_KINDS),
    check(
      "run_changes_size_check",
      sql`(${t.change} = 'deleted') = (${t.size} is null) and (${t.size} is null or ${t.size} >= 0)`,
    ),
    // Relative, never empty: the same shape the workspace layer accepts (no leading '/').
    check(
      "run_changes_path_check",
      sql`char_length(${t.path}) between 1 and 4096 and ${t.path} !~ '^/'`,
    ),
  ],
);

// One row per run whose changes were recorded. It tells "recorded, nothing changed" apart
// from "never recorded" (a run that never executed, a node that died, runs from before
// this table), and says whether the list is complete: `truncated` is true when a snapshot
// hit a bound (entries, depth, time) or could not be taken, or the list was cut at
// MAX_RUN_CHANGES_PER_RUN; the rows are then exact for the part of the Workdir both
// snapshots covered, and say nothing about the rest.
export const runChangeSets = pgTable(
  "run_change_sets",
  {
    runId: uuid("run_id").primaryKey(),
    uid: text("uid").notNull(),
    truncated: boolean("truncated").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    foreignKey({
      name: "run_change_sets_run_fk",
      columns: [t.runId, t.uid],
      foreignColumns: [agentRuns.runId, agentRuns.uid],
    }),
  ],
);

export type RunChangeRow = typeof runChanges.$inferSelect;
export type NewRunChangeRow = typeof runChanges.$inferInsert;
export type RunChangeSet = typeof runChangeSets.$inferSelect;
