import { isNotNull, lt, or, type SQL, sql } from "drizzle-orm";
import { nodes } from "../db/schema/nodes.ts";

/** Between a node's heartbeats (agent-host/node/node-heartbeat.ts). */
export const DEFAULT_NODE_HEARTBEAT_INTERVAL_MS = 5_000;
/**
 * A node whose heartbeat is older than this is `lost` (docs/architecture.md §10): the sweeper
 * ends its runs and releases its sandboxes. Six heartbeats: a few slow or failed beats
 * never lose a healthy node.
 */
export const DEFAULT_NODE_TTL_MS = 30_000;

/**
 * SQL true for a node that is lost: stopped cleanly, or no heartbeat for `nodeTtlMs`
 * (database clock, the one heartbeats are written with).
 */
export function nodeIsLost(nodeTtlMs: number): SQL {
  return or(
    isNotNull(nodes.stoppedAt),
    lt(nodes.heartbeatAt, sql`now() - (${nodeTtlMs}::bigint * interval '1 millisecond')`),
  ) as SQL;
}
