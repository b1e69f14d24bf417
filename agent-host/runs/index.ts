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
export type { CancelWatcher } from "./cancel-watcher.ts";
export { type ClaimOutcome, claimRun, releaseClaim } from "./claim-run.ts";
export { type ListenFn, postgresListen } from "./listen.ts";
export {
  type ModelClientFactory,
  type ModelClientRequest,
  modelClientFactoryFor,
  modelConfigFromEnv,
} from "./model-client-factory.ts";
export { NODE_SHUTDOWN_ERROR } from "./run-ending.ts";
export type { RootRunResult } from "./run-executor.ts";
export {
  DEFAULT_RUN_WORKER_LIMITS,
  type RunWorkerLimits,
  resolveRunWorkerLimits,
} from "./run-limits.ts";
export type { RunSandboxes } from "./run-sandboxes.ts";
export { RunWorker, type RunWorkerDeps } from "./run-worker.ts";
export { createSandboxExec } from "./sandbox-exec-adapter.ts";
export {
  createEmptySkillProjection,
  type SkillProjection,
  type SkillProjectionOutcome,
} from "./skill-projection.ts";
export { createSqsWorkQueue, type SqsWorkQueueOptions } from "./sqs-work-queue.ts";
export { cleanupExecutionTree, type TreeCleanupOutcome } from "./tree-cleanup.ts";
export type { ReceivedMessage, WorkQueue } from "./work-queue.ts";
