import { sql } from "drizzle-orm";
import type { PgTableExtraConfigValue } from "drizzle-orm/pg-core";
import {
  boolean,
  check,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  unique,
  uuid,
} from "drizzle-orm/pg-core";
import { createdAt, enumCheck, timestamptz } from "./columns.ts";
import { conversations } from "./conversations.ts";
import { requests } from "./requests.ts";

export const RUN_STATUSES = [
  "pending",
  "running",
  "awaiting_approval",
  "succeeded",
  "failed",
  "cancelled",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const TERMINAL_RUN_STATUSES = ["succeeded", "failed", "cancelled"] as const;

export interface RunError {
  code: string;
  message: string;
}

export const agentRuns = pgTable(
  "agent_runs",
  {
    runId: uuid("run_id").primaryKey().defaultRandom(),
    uid: text("uid").notNull(),
    threadId: uuid("thread_id").notNull(),
    // A sub-agent run names the run that spawned it.
    parentRunId: uuid("parent_run_id"),
    // The user request behind a root run; sub-agent runs are spawned by a run, not a
    // request, so they may leave it NULL (a root run may not, see the check below).
    requestId: uuid("request_id"),
    // Always the thread's root_thread_id (enforced by agent_runs_thread_fk).
    runtimeScopeId: uuid("runtime_scope_id").notNull(),
    status: text("status", { enum: RUN_STATUSES }).notNull().default("pending"),
    cancelRequested: boolean("cancel_requested").notNull().default(false),
    // Fencing token for run state: every claim is
    // `UPDATE ... SET attempt = attempt + 1 ... WHERE run_id = $1 AND attempt = $seen`,
    // and every later write by that worker carries `AND attempt = $mine`, so a worker
    // whose lease was taken over matches zero rows and stops.
    attempt: integer("attempt").notNull().default(0),
    ownerNode: text("owner_node"),
    leaseExpiresAt: timestamptz("lease_expires_at"),
    error: jsonb("error").$type<RunError>(),
    input: text("input").notNull(),
    agent: jsonb("agent").$type<Record<string, unknown>>().notNull().default({}),
    createdAt: createdAt(),
    startedAt: timestamptz("started_at"),
    finishedAt: timestamptz("finished_at"),
    // Last time the run was put on the queue; the sweeper re-dispatches pending runs
    // whose message was lost (commit, then enqueue: the enqueue can fail).
    dispatchedAt: timestamptz("dispatched_at"),
    // Set when a worker took the run's message and left the run waiting in Postgres for a
    // fair slot (docs/decisions/0037): from then on no message is needed, the run worker
    // of any node claims it when its uid is under max_concurrent_runs and its turn comes.
    waitingSince: timestamptz("waiting_since"),
    // The W3C trace context (traceparent / tracestate) of the delivery that parked the
    // run, so the node that claims it continues the submission's trace
    // (docs/decisions/0034). Null when tracing is off.
    traceContext: jsonb("trace_context").$type<Record<string, string>>(),
    // The X-Request-Id of the API request that submitted the run (not `request_id`, which
    // is the `requests` row): the agent-host binds it into every log line of the run, on
    // whichever node and delivery claims it (docs/decisions/0059). A sub-agent copies its
    // root's. Null for runs submitted before it existed.
    originRequestId: text("origin_request_id"),
  },
  // Annotated: messages -> agent_runs -> requests -> messages reference each other, and
  // TypeScript cannot infer a table type through that cycle.
  (t): PgTableExtraConfigValue[] => [
    unique("agent_runs_run_id_uid_key").on(t.runId, t.uid),
    unique("agent_runs_run_scope_key").on(t.runId, t.uid, t.runtimeScopeId),
    // The run's scope is its thread's root, and the thread has the same uid.
    foreignKey({
      name: "agent_runs_thread_fk",
      columns: [t.threadId, t.uid, t.runtimeScopeId],
      foreignColumns: [conversations.threadId, conversations.uid, conversations.rootThreadId],
    }),
    // Sub-agent runs inherit their creator's uid and runtime scope (one sandbox per
    // execution tree); a link across scopes or tenants is rejected.
    foreignKey({
      name: "agent_runs_parent_fk",
      columns: [t.parentRunId, t.uid, t.runtimeScopeId],
      foreignColumns: [t.runId, t.uid, t.runtimeScopeId],
    }),
    foreignKey({
      name: "agent_runs_request_fk",
      columns: [t.requestId, t.threadId, t.uid],
      foreignColumns: [requests.id, requests.threadId, requests.uid],
    }),
    enumCheck("agent_runs_status_check", t.status, RUN_STATUSES),
    check("agent_runs_attempt_check", sql`${t.attempt} >= 0`),
    // The API adopts a caller's id only up to 128 safe characters (shared/http/request-context.ts).
    check(
      "agent_runs_origin_request_id_check",
      sql`${t.originRequestId} is null or char_length(${t.originRequestId}) between 1 and 128`,
    ),
    check(
      "agent_runs_request_check",
      sql`${t.parentRunId} is not null or ${t.requestId} is not null`,
    ),
    check(
      "agent_runs_error_check",
      sql`${t.error} is null or (jsonb_typeof(${t.error}) = 'object' and jsonb_typeof(${t.error} -> 'code') = 'string' and jsonb_typeof(${t.error} -> 'message') = 'string')`,
    ),
    check("agent_runs_failed_error_check", sql`${t.status} <> 'failed' or ${t.error} is not null`),
    // finished_at is set exactly when the run reached a terminal state.
    check(
      "agent_runs_finished_check",
      sql`(${t.status} in ('succeeded', 'failed', 'cancelled')) = (${t.finishedAt} is not null)`,
    ),
    // A running run always has an owner and a lease, or the expired-lease sweep could
    // never find it again.
    check(
      "agent_runs_running_check",
      sql`${t.status} <> 'running' or (${t.ownerNode} is not null and ${t.leaseExpiresAt} is not null and ${t.startedAt} is not null)`,
    ),
    // Sweeper: pending root runs not parked for a fair slot, oldest first. Exactly the
    // sweeper's conditions, so no per-uid query can pick it: with statistics taken while
    // nothing was pending, a generic plan of the submission's queued-runs count scanned
    // this index across every uid instead of the uid's own (docs/decisions/0089).
    index("agent_runs_pending_idx")
      .on(t.status, t.createdAt)
      .where(
        sql`${t.status} = 'pending' and ${t.parentRunId} is null and ${t.waitingSince} is null`,
      ),
    // Fair share: each uid's oldest waiting run, and its queued runs at submission.
    index("agent_runs_pending_uid_idx").on(t.uid, t.createdAt).where(sql`${t.status} = 'pending'`),
    // Lease recovery: running runs whose lease expired.
    index("agent_runs_lease_idx")
      .on(t.status, t.leaseExpiresAt)
      .where(sql`${t.status} = 'running'`),
    // Execution-tree cleanup: active runs of one (uid, runtime scope).
    index("agent_runs_scope_idx").on(t.uid, t.runtimeScopeId, t.status),
    // Runs waiting for a person (the awaiting gauge, thread badges).
    index("agent_runs_awaiting_idx").on(t.threadId).where(sql`${t.status} = 'awaiting_approval'`),
    // Runs of a thread (active-run check on thread delete, listings).
    index("agent_runs_thread_idx").on(t.threadId, t.createdAt),
  ],
);

export type AgentRun = typeof agentRuns.$inferSelect;
export type NewAgentRun = typeof agentRuns.$inferInsert;
