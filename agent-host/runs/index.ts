// The run worker (issue 6): consumes the run queue, claims runs in Postgres, prepares
// Workdir, skills and sandbox, runs the agent loop (./agent/) with its events fenced by
// the claim, runs sub-agents in-process, honours cancels and cleans execution trees up.
// main.ts constructs a RunWorker; the control plane's sweeper calls failExpiredLeases,
// which lives with the channels and the tree lock in shared/runs/ (re-exported here).
// See docs/decisions/0008-run-worker.md.

export {
  type ExpiredScope,
  failExpiredLeases,
  MAX_EXPIRED_RUNS_PER_SWEEP,
  NODE_LOST_ERROR,
} from "../../shared/runs/fail-expired-leases.ts";
export { RUN_CANCEL_CHANNEL, RUN_EVENTS_CHANNEL } from "../../shared/runs/run-channels.ts";
export { type ClaimOutcome, releaseClaim } from "./claim/claim-run.ts";
export type { CancelWatcher } from "./execute/cancel-watcher.ts";
export {
  type ModelClientFactory,
  type ModelClientRequest,
  modelClientFactoryFor,
  modelConfigFromEnv,
} from "./execute/model-client-factory.ts";
export { NODE_SHUTDOWN_ERROR } from "./execute/run-ending.ts";
export type { RunSandboxes } from "./execute/run-sandboxes.ts";
export { createSandboxExec } from "./execute/sandbox-exec-adapter.ts";
export {
  createEmptySkillProjection,
  type SkillProjection,
  type SkillProjectionOutcome,
} from "./execute/skill-projection.ts";
export { cleanupExecutionTree, type TreeCleanupOutcome } from "./execute/tree-cleanup.ts";
export { createSqsWorkQueue, type SqsWorkQueueOptions } from "./queue/sqs-work-queue.ts";
export type { ReceivedMessage, WorkQueue } from "./queue/work-queue.ts";
export {
  DEFAULT_RUN_WORKER_LIMITS,
  type RunWorkerLimits,
  resolveRunWorkerLimits,
} from "./run-limits.ts";
export { RunWorker, type RunWorkerDeps } from "./run-worker.ts";
