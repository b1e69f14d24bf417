// Run state both planes write (the run worker in agent-host/, the sweeper in functions/):
// NOTIFY channels, the execution-tree lock, the terminal event, the expired-lease sweep.
// Runtime-agnostic: drizzle and shared/ only. See docs/decisions/0008-run-worker.md.

export * from "./end-scope-node-lost.ts";
export * from "./fail-expired-leases.ts";
export * from "./fail-lost-nodes.ts";
export * from "./fail-node-runs.ts";
export * from "./insert-terminal-event.ts";
export * from "./node-liveness.ts";
export * from "./run-channels.ts";
export * from "./tree-lock.ts";
