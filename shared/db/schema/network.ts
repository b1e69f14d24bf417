import { sql } from "drizzle-orm";
import {
  bigint,
  check,
  foreignKey,
  index,
  integer,
  pgTable,
  text,
  uuid,
} from "drizzle-orm/pg-core";
import { agentRuns } from "./agent-runs.ts";
import { createdAt, enumCheck, timestamptz } from "./columns.ts";

export const NETWORK_POLICY_MODES = ["none", "allowlist"] as const;
export const NETWORK_DECISIONS = ["allowed", "denied"] as const;

// An admin's network ceiling for one uid (PUT /v1/admin/users/{uid}/network). A uid without
// a row has the deployment's default. Not tenant-linked, like user_limits: a uid may get a
// policy before it ever made a request. The egress proxy reads it per connection, so a
// change applies to the next connection on every node (docs/decisions/0115).
export const userNetworkPolicies = pgTable(
  "user_network_policies",
  {
    uid: text("uid").primaryKey(),
    mode: text("mode").$type<(typeof NETWORK_POLICY_MODES)[number]>().notNull(),
    allow: text("allow").array().notNull().default(sql`'{}'::text[]`),
    updatedAt: timestamptz("updated_at").notNull().defaultNow(),
  },
  (t) => [enumCheck("user_network_policies_mode_check", t.mode, NETWORK_POLICY_MODES)],
);

// One row per connection a run's sandbox asked the egress proxy for (GET
// /v1/runs/{id}/network), written by the agent-host; at most a bound per run, the rest only
// counted. Linked to its run with the run's uid, so a row can never name another tenant.
export const networkRequests = pgTable(
  "network_requests",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    runId: uuid("run_id").notNull(),
    uid: text("uid").notNull(),
    host: text("host").notNull(),
    port: integer("port").notNull(),
    /** The address connected to (allowed) or refused; null when the name did not resolve. */
    address: text("address"),
    protocol: text("protocol").notNull(),
    decision: text("decision").$type<(typeof NETWORK_DECISIONS)[number]>().notNull(),
    reason: text("reason"),
    bytesUp: bigint("bytes_up", { mode: "number" }).notNull().default(0),
    bytesDown: bigint("bytes_down", { mode: "number" }).notNull().default(0),
    durationMs: integer("duration_ms").notNull().default(0),
    startedAt: timestamptz("started_at").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    foreignKey({
      name: "network_requests_run_fk",
      columns: [t.runId, t.uid],
      foreignColumns: [agentRuns.runId, agentRuns.uid],
    }),
    enumCheck("network_requests_decision_check", t.decision, NETWORK_DECISIONS),
    check("network_requests_port_check", sql`${t.port} between 0 and 65535`),
    index("network_requests_run_idx").on(t.runId, t.id),
  ],
);

export type UserNetworkPolicyRow = typeof userNetworkPolicies.$inferSelect;
export type NetworkRequestRow = typeof networkRequests.$inferSelect;
