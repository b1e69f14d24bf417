import { intVar } from "./env-vars.ts";

export const DEFAULT_NODE_TTL_SECONDS = 30;
export const DEFAULT_NODE_HEARTBEAT_SECONDS = 5;
export const DEFAULT_DB_STATEMENT_TIMEOUT_SECONDS = 60;

/** Node liveness, shared by the control plane (sweeper, health, admin) and every agent-host. */
export const nodeTtlEnv = {
  NODE_TTL_SECONDS: intVar(3, 3_600)
    .default(DEFAULT_NODE_TTL_SECONDS)
    .describe(
      `A node whose heartbeat is older than this is lost: its runs end node_lost and its sandboxes are released (default ${DEFAULT_NODE_TTL_SECONDS}). Set the same value on the control plane and every agent-host.`,
    ),
  DB_STATEMENT_TIMEOUT_SECONDS: intVar(1, 3_600)
    .default(DEFAULT_DB_STATEMENT_TIMEOUT_SECONDS)
    .describe(
      `Postgres statement_timeout of every pooled connection, so no query hangs for ever (default ${DEFAULT_DB_STATEMENT_TIMEOUT_SECONDS}).`,
    ),
};

/** The agent-host's own heartbeat. */
export const nodeHeartbeatEnv = {
  NODE_HEARTBEAT_SECONDS: intVar(1, 600)
    .default(DEFAULT_NODE_HEARTBEAT_SECONDS)
    .describe(
      `Between heartbeats of this node's row; at most a third of NODE_TTL_SECONDS (default ${DEFAULT_NODE_HEARTBEAT_SECONDS}).`,
    ),
};
