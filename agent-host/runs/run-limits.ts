import { type DatabaseRetry, DEFAULT_DATABASE_RETRY } from "../../shared/db/database-retry.ts";
import { MAX_BATCH_ITEMS } from "../../shared/db/schema.ts";
import { DEFAULT_NODE_TTL_SECONDS } from "../../shared/env/liveness-env.ts";
import { DEFAULT_USER_LIMITS } from "../../shared/limits/user-limits.ts";

const SECOND_MS = 1000;
const MINUTE_MS = 60 * SECOND_MS;

/**
 * Bounds and timings of the run worker. main.ts passes the defaults (concurrency from
 * WORKER_CONCURRENCY); tests shrink them so leases expire and cleanups give up quickly.
 */
export interface RunWorkerLimits {
  /** Root runs this node executes at once; their sub-agents run inside their slot. */
  readonly concurrency: number;
  /**
   * While a slot is free, how often the worker looks for waiting runs without being told
   * (a NOTIFY on the slots channel normally wakes it at once): the bound on noticing a
   * slot freed by a lost notification or by the sweeper.
   */
  readonly waitingPollMs: number;
  /** max_concurrent_runs of a uid without an admin override (DEFAULT_USER_LIMITS). */
  readonly defaultMaxConcurrentRuns: number;
  /** SQS long poll (1 to 20 s); an empty queue costs one request per this. */
  readonly receiveWaitSeconds: number;
  /**
   * How long a received message stays hidden. The message is deleted right after the
   * claim (the run's fate then lives in Postgres), so this only has to cover the claim.
   */
  readonly visibilityTimeoutSeconds: number;
  /** Bound on one queue call other than the long poll (delete, send, change visibility). */
  readonly queueCallTimeoutMs: number;
  /** First and largest delay between failed receives (exponential, full jitter). */
  readonly receiveBackoffMinMs: number;
  readonly receiveBackoffMaxMs: number;
  /** A claimed run belongs to this node for this long after each heartbeat. */
  readonly leaseTtlMs: number;
  /**
   * Between heartbeats: each extends the lease and reads `cancel_requested`, so it is
   * also the fallback bound on noticing a cancel when LISTEN is down.
   */
  readonly heartbeatIntervalMs: number;
  /** stop(): how long runs in flight may take to finish before they are stopped. */
  readonly stopGraceMs: number;
  /** A run handed back before it executed (node quiesced, sandbox on another node) is dispatched again after this. */
  readonly handBackDelaySeconds: number;
  /**
   * Times a run may be handed back before it fails `hand_back_limit` (MAX_HAND_BACKS). A
   * sandbox on a lost node does not count against it for long: the node TTL releases it.
   */
  readonly maxHandBacks: number;
  /** Nesting of sub-agents: a root run is depth 0; a run at this depth may not spawn. */
  readonly maxSubagentDepth: number;
  /** Sub-agents one run may spawn over its whole life. */
  readonly maxSubagentsPerRun: number;
  /** Tree cleanup: how long to wait for cancelled stragglers before destroying anyway. */
  readonly treeCleanupWaitMs: number;
  readonly treeCleanupPollMs: number;
  /** Destroying the sandbox at tree cleanup (drain + container removal). */
  readonly sandboxDestroyTimeoutMs: number;
  /** Thread history loaded into a run's model context, newest kept. */
  readonly maxHistoryMessages: number;
  /**
   * Scans of the writable root around each command (before and after it, for its change
   * batch): files and directories recorded per scan. Each entry is one lstat, and the walk
   * runs on the worker's thread, so this also bounds the time it takes.
   */
  readonly changesMaxEntries: number;
  /** Deepest directory a snapshot lists (the Workdir is depth 0). */
  readonly changesMaxDepth: number;
  /** Wall-clock budget of one snapshot; past it the rest is unlisted (truncated). */
  readonly changesSnapshotTimeoutMs: number;
  /** File facts stored per change batch (one command), at most MAX_BATCH_ITEMS. */
  readonly changesMaxRecorded: number;
  /**
   * A command waiting for its Execution Lease re-checks at least this often (a release is
   * also NOTIFYed; a dead holder is not, its rows lapse with its run lease).
   */
  readonly leasePollIntervalMs: number;
  /**
   * Server-side bound on waiting for the uid's lease arrival lock (lock_timeout); each
   * lease and batch statement is one statement bounded by the connection's statement_timeout.
   */
  readonly leaseStatementTimeoutMs: number;
  /** Between two repair passes over the kept change batches. */
  readonly changeRepairIntervalMs: number;
  /**
   * A root run's events and ending when the database does not answer (decision 0112): one
   * try is abandoned after `databaseRetryAttemptMs`, tries are at most
   * `databaseRetryMaxDelayMs` apart, and the run gives up after `databaseRetryGiveUpMs`
   * without an answer (its lease is extended by each try that gets one).
   */
  readonly databaseRetryAttemptMs: number;
  readonly databaseRetryMaxDelayMs: number;
  readonly databaseRetryGiveUpMs: number;
  /**
   * Scope affinity (decision 0113): a waiting run whose scope's sandbox is running on
   * another live node is left to that node, not claimed here and handed back: while a run
   * uses the sandbox there, and for this long after both the sandbox was released (kept
   * warm) and the run began waiting. Past it, a node with a free slot claims the run and
   * the kept-warm sandbox is given up (the run starts fresh there). 0: no affinity (claim,
   * then hand back `sandbox_on_other_node`, as before 0113).
   */
  readonly affinityWaitMs: number;
  /** A node whose heartbeat is older than this is lost (NODE_TTL_SECONDS): no affinity to it. */
  readonly nodeTtlMs: number;
}

export const DEFAULT_RUN_WORKER_LIMITS: RunWorkerLimits = Object.freeze({
  concurrency: 4,
  waitingPollMs: 5 * SECOND_MS,
  defaultMaxConcurrentRuns: DEFAULT_USER_LIMITS.max_concurrent_runs,
  receiveWaitSeconds: 20,
  visibilityTimeoutSeconds: 60,
  queueCallTimeoutMs: 10 * SECOND_MS,
  receiveBackoffMinMs: 500,
  receiveBackoffMaxMs: 30 * SECOND_MS,
  leaseTtlMs: 30 * SECOND_MS,
  heartbeatIntervalMs: 3 * SECOND_MS,
  stopGraceMs: 2 * MINUTE_MS,
  handBackDelaySeconds: 5,
  maxHandBacks: 20,
  maxSubagentDepth: 2,
  maxSubagentsPerRun: 16,
  treeCleanupWaitMs: 15 * SECOND_MS,
  treeCleanupPollMs: 200,
  sandboxDestroyTimeoutMs: 2 * MINUTE_MS,
  maxHistoryMessages: 200,
  // Above 100k files a Workdir's batches say truncated; each entry is one lstat per scan.
  changesMaxEntries: 120_000,
  changesMaxDepth: 16,
  changesSnapshotTimeoutMs: 10 * SECOND_MS,
  changesMaxRecorded: MAX_BATCH_ITEMS,
  leasePollIntervalMs: 500,
  leaseStatementTimeoutMs: 10 * SECOND_MS,
  changeRepairIntervalMs: 30 * SECOND_MS,
  databaseRetryAttemptMs: DEFAULT_DATABASE_RETRY.attemptTimeoutMs,
  databaseRetryMaxDelayMs: DEFAULT_DATABASE_RETRY.maxDelayMs,
  databaseRetryGiveUpMs: DEFAULT_DATABASE_RETRY.giveUpAfterMs,
  // Long enough for a busy node to finish an ordinary command and take the thread's next
  // turn; short enough that a thread does not wait a whole long job for a warm sandbox.
  affinityWaitMs: MINUTE_MS,
  nodeTtlMs: DEFAULT_NODE_TTL_SECONDS * SECOND_MS,
});

/** The retry policy of a root run's last writes (database-retry.ts). */
export function databaseRetryOf(limits: RunWorkerLimits): DatabaseRetry {
  return {
    attemptTimeoutMs: limits.databaseRetryAttemptMs,
    maxDelayMs: limits.databaseRetryMaxDelayMs,
    giveUpAfterMs: limits.databaseRetryGiveUpMs,
  };
}

/** SQS's own bounds on long polling and on a message's delay. */
export const MAX_RECEIVE_WAIT_SECONDS = 20;
export const MAX_SQS_DELAY_SECONDS = 900;
/** SQS returns at most this many messages per receive. */
export const MAX_MESSAGES_PER_RECEIVE = 10;

/**
 * The defaults with `overrides`, checked: a heartbeat that is not well inside the lease
 * would let a healthy run's lease expire (and the sweeper fail it as node_lost).
 */
export function resolveRunWorkerLimits(overrides: Partial<RunWorkerLimits> = {}): RunWorkerLimits {
  const limits = { ...DEFAULT_RUN_WORKER_LIMITS, ...overrides };
  const problems: string[] = [];
  if (!Number.isInteger(limits.concurrency) || limits.concurrency < 1) {
    problems.push("concurrency must be a positive integer");
  }
  if (!(limits.waitingPollMs >= 10)) problems.push("waitingPollMs must be at least 10");
  if (!Number.isInteger(limits.defaultMaxConcurrentRuns) || limits.defaultMaxConcurrentRuns < 1) {
    problems.push("defaultMaxConcurrentRuns must be a positive integer");
  }
  if (limits.receiveWaitSeconds < 0 || limits.receiveWaitSeconds > MAX_RECEIVE_WAIT_SECONDS) {
    problems.push(`receiveWaitSeconds must be 0 to ${MAX_RECEIVE_WAIT_SECONDS}`);
  }
  if (limits.heartbeatIntervalMs * 3 > limits.leaseTtlMs) {
    problems.push(
      "heartbeatIntervalMs must be at most a third of leaseTtlMs, so two missed heartbeats do not lose the lease: lower heartbeatIntervalMs or raise leaseTtlMs",
    );
  }
  if (limits.handBackDelaySeconds < 0 || limits.handBackDelaySeconds > MAX_SQS_DELAY_SECONDS) {
    problems.push(`handBackDelaySeconds must be 0 to ${MAX_SQS_DELAY_SECONDS}`);
  }
  if (!Number.isInteger(limits.maxHandBacks) || limits.maxHandBacks < 0) {
    problems.push("maxHandBacks must be a whole number, 0 or more");
  }
  if (limits.maxSubagentDepth < 0 || limits.maxSubagentsPerRun < 0) {
    problems.push("maxSubagentDepth and maxSubagentsPerRun must not be negative");
  }
  if (limits.changesMaxEntries < 0 || limits.changesMaxDepth < 0) {
    problems.push("changesMaxEntries and changesMaxDepth must not be negative");
  }
  if (limits.changesMaxRecorded < 0 || limits.changesMaxRecorded > MAX_BATCH_ITEMS) {
    problems.push(`changesMaxRecorded must be 0 to ${MAX_BATCH_ITEMS}`);
  }
  if (problems.length > 0)
    throw new RangeError(`Invalid run worker limits: ${problems.join("; ")}`);
  return limits;
}
