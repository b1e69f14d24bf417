import { pgTable, text } from "drizzle-orm/pg-core";
import { enumCheck, timestamptz } from "./columns.ts";

export const NODE_STATES = ["active", "quiesced"] as const;
export type NodeState = (typeof NODE_STATES)[number];

// One row per agent-host daemon. A quiesced node takes no new sandbox generations.
export const nodes = pgTable(
  "nodes",
  {
    nodeId: text("node_id").primaryKey(),
    state: text("state", { enum: NODE_STATES }).notNull().default("active"),
    dataPlaneUrl: text("data_plane_url").notNull(),
    heartbeatAt: timestamptz("heartbeat_at").notNull().defaultNow(),
    startedAt: timestamptz("started_at").notNull().defaultNow(),
  },
  (t) => [enumCheck("nodes_state_check", t.state, NODE_STATES)],
);

export type NodeRow = typeof nodes.$inferSelect;
export type NewNodeRow = typeof nodes.$inferInsert;
