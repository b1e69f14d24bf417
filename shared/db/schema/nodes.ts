import { sql } from "drizzle-orm";
import { integer, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import type { StoredNodeRuntime } from "../../contracts/node-runtime.ts";
import { enumCheck, timestamptz } from "./columns.ts";

/**
 * The operator's intent for a node. `lost` is not stored: it is derived from the
 * heartbeat (older than the node TTL, or a clean stop recorded in `stopped_at`), so an
 * operator's quiesce survives a node going away and coming back.
 */
export const NODE_STATES = ["active", "quiesced"] as const;
export type NodeState = (typeof NODE_STATES)[number];

// One row per agent-host daemon. A quiesced node takes no new sandbox generations.
// The heartbeat (agent-host/node/node-heartbeat.ts) rewrites heartbeat_at and the counters
// every few seconds; the sweeper treats a node whose heartbeat is older than the node
// TTL as lost (shared/runs/release-lost-nodes.ts).
export const nodes = pgTable(
  "nodes",
  {
    nodeId: text("node_id").primaryKey(),
    state: text("state", { enum: NODE_STATES }).notNull().default("active"),
    dataPlaneUrl: text("data_plane_url").notNull(),
    heartbeatAt: timestamptz("heartbeat_at").notNull().defaultNow(),
    startedAt: timestamptz("started_at").notNull().defaultNow(),
    /** Sandbox tiers ready on the node at its last heartbeat (`container`, `process`). */
    sandboxTiers: jsonb("sandbox_tiers").$type<string[]>().notNull().default(sql`'[]'::jsonb`),
    liveSandboxes: integer("live_sandboxes").notNull().default(0),
    runningRuns: integer("running_runs").notNull().default(0),
    /**
     * The node's own runtime report (GET /v1/admin/runtime): each tier's preflight and,
     * once verified, each Runtime Asset. Null until the node first wrote it.
     */
    runtime: jsonb("runtime").$type<StoredNodeRuntime>(),
    /** Set by a clean stop (SIGTERM): the node is gone at once, not after the TTL. */
    stoppedAt: timestamptz("stopped_at"),
  },
  (t) => [enumCheck("nodes_state_check", t.state, NODE_STATES)],
);

export type NodeRow = typeof nodes.$inferSelect;
export type NewNodeRow = typeof nodes.$inferInsert;
