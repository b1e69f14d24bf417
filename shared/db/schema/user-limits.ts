import { bigint, integer, pgTable, text } from "drizzle-orm/pg-core";
import { timestamptz } from "./columns.ts";

// An admin's per-uid overrides (PUT /v1/admin/users/{uid}/limits). A null column takes the
// deployment's default; a user without a row has only defaults. Not tenant-linked: a uid
// may have limits before it ever made a request.
export const userLimits = pgTable("user_limits", {
  uid: text("uid").primaryKey(),
  workspaceBytes: bigint("workspace_bytes", { mode: "number" }),
  workspaceInodes: bigint("workspace_inodes", { mode: "number" }),
  maxConcurrentRuns: integer("max_concurrent_runs"),
  requestsPerMinute: integer("requests_per_minute"),
  egressBytesPerRun: bigint("egress_bytes_per_run", { mode: "number" }),
  maxCheckpointsPerThread: integer("max_checkpoints_per_thread"),
  updatedAt: timestamptz("updated_at").notNull().defaultNow(),
});

export type UserLimitsRow = typeof userLimits.$inferSelect;
