import { sql } from "drizzle-orm";
import {
  boolean,
  check,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";
import {
  APPROVAL_KINDS,
  type APPROVAL_SCOPES,
  APPROVAL_STATUSES,
} from "../../contracts/approval.ts";
import { agentRuns } from "./agent-runs.ts";
import { enumCheck, timestamptz } from "./columns.ts";

// One tool call (or connection) of a run that waits for a person (docs/architecture.md §14).
// The row is the pause: the run is `awaiting_approval` while one of its rows is pending, and
// `resume_state` holds what the agent loop needs to go on (the conversation so far and the
// calls not yet run), so any node resumes it. Linked with the run's uid: a row never names
// another tenant's run.
export const runApprovals = pgTable(
  "run_approvals",
  {
    approvalId: uuid("approval_id").primaryKey().defaultRandom(),
    runId: uuid("run_id").notNull(),
    uid: text("uid").notNull(),
    kind: text("kind").$type<(typeof APPROVAL_KINDS)[number]>().notNull(),
    status: text("status").$type<(typeof APPROVAL_STATUSES)[number]>().notNull(),
    tool: text("tool"),
    toolCallId: text("tool_call_id"),
    // What the person sees, and the SHA-256 of (tool, arguments text) it binds.
    arguments: jsonb("arguments"),
    argumentsHash: text("arguments_hash"),
    host: text("host"),
    port: integer("port"),
    // The sandbox generation the call was asked in (informational: a resume may get a new one).
    generation: integer("generation"),
    resumeState: jsonb("resume_state"),
    requestedAt: timestamptz("requested_at").notNull().defaultNow(),
    expiresAt: timestamptz("expires_at").notNull(),
    decidedAt: timestamptz("decided_at"),
    decidedBy: text("decided_by"),
    note: text("note"),
    scope: text("scope").$type<(typeof APPROVAL_SCOPES)[number]>(),
    // The claim (agent_runs.attempt) that took the decision into its loop: set once, so a
    // duplicate resume never runs the call again.
    resumedAttempt: integer("resumed_attempt"),
  },
  (t) => [
    foreignKey({
      name: "run_approvals_run_fk",
      columns: [t.runId, t.uid],
      foreignColumns: [agentRuns.runId, agentRuns.uid],
    }).onDelete("cascade"),
    enumCheck("run_approvals_kind_check", t.kind, APPROVAL_KINDS),
    enumCheck("run_approvals_status_check", t.status, APPROVAL_STATUSES),
    check("run_approvals_scope_check", sql`${t.scope} is null or ${t.scope} in ('once', 'run')`),
    check("run_approvals_decided_check", sql`(${t.status} = 'pending') = (${t.decidedAt} is null)`),
    check("run_approvals_note_check", sql`${t.note} is null or char_length(${t.note}) <= 2000`),
    // A run waits for one thing at a time.
    uniqueIndex("run_approvals_one_pending_idx").on(t.runId).where(sql`${t.status} = 'pending'`),
    index("run_approvals_run_idx").on(t.runId, t.requestedAt),
    // The sweeper's expiry pass.
    index("run_approvals_expiry_idx").on(t.expiresAt).where(sql`${t.status} = 'pending'`),
  ],
);

// An admin's approval policy for one uid (PUT /v1/admin/users/{uid}/approvals): tools that
// always ask, on top of whatever a run lists, and the longest a request may wait. A run can
// add tools and shorten the wait, never loosen either.
export const userApprovalPolicies = pgTable("user_approval_policies", {
  uid: text("uid").primaryKey(),
  allTools: boolean("all_tools").notNull().default(false),
  tools: text("tools").array().notNull().default(sql`'{}'::text[]`),
  maxTimeoutSeconds: integer("max_timeout_seconds"),
  updatedAt: timestamptz("updated_at").notNull().defaultNow(),
});

export type RunApprovalRow = typeof runApprovals.$inferSelect;
export type UserApprovalPolicyRow = typeof userApprovalPolicies.$inferSelect;
