import type { Logger } from "pino";
import { Registry } from "prom-client";
import {
  type QueueMessage,
  type RunDispatchMessage,
  type SkillsRefreshMessage,
  serializeQueueMessage,
} from "../../shared/contracts/queue-message.ts";
import type { Db } from "../../shared/db/client.ts";
import type { AgentRun } from "../../shared/db/schema.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { ListenFn } from "../../shared/listen/listen-fn.ts";
import {
  createWorkcellMetrics,
  type WorkcellMetrics,
} from "../../shared/metrics/workcell-metrics.ts";
import {
  extractTrace,
  injectTrace,
  inSpan,
  noTracing,
  type TraceContext,
  type Tracing,
} from "../../shared/telemetry/tracing.ts";
import type { BeforeRunCheckpoint } from "../checkpoints/before-run-checkpoint.ts";
import type { OpenRunEgress } from "../egress/run-egress.ts";
import type { RunQuotaGate } from "../quota/run-quota-gate.ts";
import type { UserWorkspaces } from "../workspace/index.ts";
import type { AgentLimits, AgentToolsOptions } from "./agent/index.ts";
import { RunBatches } from "./change-batch/run-batches.ts";
import type { ClaimOutcome } from "./claim/claim-run.ts";
import type { UnavailableTiers } from "./claim/claim-waiting-run.ts";
import type { RecordedRun } from "./claim/run-recorder.ts";
import { BackgroundCleanups } from "./execute/background-cleanups.ts";
import { CancelWatcher } from "./execute/cancel-watcher.ts";
import type { ModelClientFactory } from "./execute/model-client-factory.ts";
import { executeRootRun } from "./execute/root-run-execution.ts";
import type { RunExecutorDeps } from "./execute/run-executor-deps.ts";
import type { RunSandboxes } from "./execute/run-sandboxes.ts";
import type { ShellFor } from "./execute/sandbox-exec-adapter.ts";
import type { SkillProjection } from "./execute/skill-projection.ts";
import { FairRunSlots } from "./fair-share/fair-run-slots.ts";
import { parkRun } from "./fair-share/park-run.ts";
import { type MessageContext, RunConsumer } from "./queue/run-consumer.ts";
import type { WorkQueue } from "./queue/work-queue.ts";
import { databaseRetryOf, type RunWorkerLimits, resolveRunWorkerLimits } from "./run-limits.ts";
import { runLogFields } from "./run-log-fields.ts";

/** Everything the run worker needs, wired once in agent-host's main.ts. */
export interface RunWorkerDeps {
  readonly db: Db;
  /** Before-run checkpoints (agent-host/checkpoints/); absent: none. */
  readonly beforeRun?: BeforeRunCheckpoint;
  /** The run queue (`run.dispatch` and `skills.refresh` messages): createSqsWorkQueue. */
  readonly queue: WorkQueue;
  /** This node's SandboxManager (started: reconciled, reaper running). */
  readonly sandboxManager: RunSandboxes;
  /**
   * False while this node should take no run (its sandbox tier is gone, TierWatch): the
   * slots claim nothing and runs wait in Postgres for another node. Default: always.
   */
  readonly canClaim?: () => boolean;
  /**
   * Tiers whose runs this node does not claim now (a tier that stopped answering while
   * another still does, decision 0114). Default: none.
   */
  readonly unavailableTiers?: () => UnavailableTiers;
  /** The bash tool's shell: the Runtime Assets' bash, or why it is unavailable. */
  readonly shell?: ShellFor;
  /** A run's network (agent-host/egress/run-egress.ts); absent: no run gets network. */
  readonly egress?: OpenRunEgress;
  /** How long an approval waits when the run does not say (../approvals/); default a day. */
  readonly approvalTimeoutSeconds?: number;
  /** Built with `owner: {uid: 1000, gid: 1000}`, so the sandbox user owns what it creates. */
  readonly userWorkspaces: UserWorkspaces;
  /** agent-host/skills' refresher (createEmptySkillProjection in tests without skills). */
  readonly skillProjection: SkillProjection;
  readonly modelClientFactory: ModelClientFactory;
  /** This agent-host's node id; its `nodes` row must exist. */
  readonly nodeId: string;
  /** The agent-host's data root (DATA_ROOT): change batch repair records live under it. */
  readonly dataRoot: string;
  readonly logger: Logger;
  /** The agent-host's series; default: this worker's own registry. */
  readonly metrics?: WorkcellMetrics;
  readonly limits?: Partial<RunWorkerLimits>;
  /**
   * LISTEN for cancel notifications (postgresListen(sql)). Without it
   * cancels are noticed at the next heartbeat only.
   */
  readonly listen?: ListenFn;
  /**
   * Handles `skills.refresh` messages from the same queue (with the id of the API request
   * that sent it, when the message names one); without it they are left for retry.
   */
  readonly skillsRefresh?: (
    message: SkillsRefreshMessage,
    signal: AbortSignal,
    requestId: string | undefined,
  ) => Promise<void>;
  readonly agentTools?: Omit<AgentToolsOptions, "subagents">;
  readonly agentLimits?: Partial<AgentLimits>;
  readonly systemPromptExtra?: string;
  /**
   * Spans of each run, from its queue message to its terminal event (docs/architecture.md
   * §10); built from OTEL_* by the entry. Default: off.
   */
  readonly tracing?: Tracing;
  /**
   * UserWorkspace quotas in the accounting mode (createRunQuotaGate): a uid over its quota
   * gets no new run and no next command. Without it nothing is checked (tests of the
   * worker alone); agent-host.ts always wires it.
   */
  readonly quota?: RunQuotaGate;
}

/**
 * The run worker of one agent-host: consumes the run queue, puts each dispatched run in
 * line in Postgres, claims waiting runs in fair order across uids (FairRunSlots;
 * at-least-once in, exactly-once effect: a duplicate delivery finds the run no longer
 * pending and is dropped), executes them (executeRootRun), and on stop lets runs
 * finish (bounded by `stopGraceMs`) before stopping the rest.
 */
export class RunWorker {
  readonly #deps: RunWorkerDeps;
  readonly #limits: RunWorkerLimits;
  readonly #log: Logger;
  readonly #metrics: WorkcellMetrics;
  readonly #cancels: CancelWatcher;
  readonly #executorDeps: RunExecutorDeps;
  readonly #batches: RunBatches;
  readonly #consumer: RunConsumer;
  readonly #slots: FairRunSlots;
  /** Execution-tree cleanups after their slot is free (decision 0158); stop() drains them. */
  readonly #cleanups: BackgroundCleanups;
  /** Aborted when the grace period of stop() is over: runs still executing are stopped. */
  readonly #shutdown = new AbortController();
  readonly #tracing: Tracing;
  #started = false;
  #stopped: Promise<void> | undefined;

  constructor(deps: RunWorkerDeps) {
    this.#deps = deps;
    this.#tracing = deps.tracing ?? noTracing();
    this.#limits = resolveRunWorkerLimits(deps.limits);
    // The agent-host's logger carries node_id already: pino would write it twice.
    this.#log = deps.logger.child({ component: "run-worker" });
    this.#metrics = deps.metrics ?? createWorkcellMetrics(new Registry());
    this.#cancels = new CancelWatcher({
      ...(deps.listen === undefined ? {} : { listen: deps.listen }),
      logger: this.#log,
    });
    this.#batches = new RunBatches({
      db: deps.db,
      nodeId: deps.nodeId,
      dataRoot: deps.dataRoot,
      userWorkspaces: deps.userWorkspaces,
      ...(deps.listen === undefined ? {} : { listen: deps.listen }),
      limits: this.#limits,
      logger: this.#log,
      ...(deps.quota === undefined ? {} : { quota: deps.quota }),
      // Bound late: the slots are built below, a lease wait happens only once they run.
      lendSlot: (rootRunId) => this.#slots.lend(rootRunId),
    });
    this.#cleanups = new BackgroundCleanups({
      logger: this.#log,
      // As many as slots: a burst of endings past that holds slots again (backpressure).
      concurrency: this.#limits.concurrency,
      attempts: 3,
      retryDelayMs: 200,
    });
    this.#executorDeps = {
      cleanups: this.#cleanups,
      leasedCommands: this.#batches.commands,
      db: deps.db,
      sandboxes: deps.sandboxManager,
      userWorkspaces: deps.userWorkspaces,
      skillProjection: deps.skillProjection,
      modelClientFactory: deps.modelClientFactory,
      cancelWatcher: this.#cancels,
      nodeId: deps.nodeId,
      logger: this.#log,
      metrics: this.#metrics,
      limits: this.#limits,
      tracing: this.#tracing,
      ...(deps.shell === undefined ? {} : { shell: deps.shell }),
      ...(deps.egress === undefined ? {} : { egress: deps.egress }),
      ...(deps.approvalTimeoutSeconds === undefined
        ? {}
        : { approvalTimeoutSeconds: deps.approvalTimeoutSeconds }),
      ...(deps.quota === undefined ? {} : { quota: deps.quota }),
      ...(deps.beforeRun === undefined ? {} : { beforeRun: deps.beforeRun }),
      ...(deps.agentTools === undefined ? {} : { agentTools: deps.agentTools }),
      ...(deps.agentLimits === undefined ? {} : { agentLimits: deps.agentLimits }),
      ...(deps.systemPromptExtra === undefined
        ? {}
        : { systemPromptExtra: deps.systemPromptExtra }),
    };
    this.#slots = new FairRunSlots({
      db: deps.db,
      nodeId: deps.nodeId,
      logger: this.#log,
      limits: this.#limits,
      execute: (claim) => this.#execute(claim),
      // Within half a lease: a claim that had committed is then still ours to beat.
      lostClaim: {
        retry: {
          ...databaseRetryOf(this.#limits),
          giveUpAfterMs: this.#limits.leaseTtlMs / 2,
        },
        logger: this.#log,
      },
      ...(deps.canClaim === undefined ? {} : { canClaim: deps.canClaim }),
      ...(deps.unavailableTiers === undefined ? {} : { unavailableTiers: deps.unavailableTiers }),
      ...(deps.listen === undefined ? {} : { listen: deps.listen }),
    });
    this.#consumer = new RunConsumer({
      queue: deps.queue,
      handle: (message, context) => this.#handle(message, context),
      logger: this.#log,
      tracing: this.#tracing,
      limits: this.#limits,
    });
  }

  /** Looks for a waiting run now (the node can take work again). */
  wake(): void {
    this.#slots.wake();
  }

  get limits(): RunWorkerLimits {
    return this.#limits;
  }

  /** LISTENs for cancels, then starts consuming. Call once. */
  async start(): Promise<void> {
    if (this.#started) throw new Error("RunWorker.start() was already called");
    this.#started = true;
    await this.#cancels.start();
    await this.#batches.start();
    await this.#slots.start();
    this.#consumer.start();
    this.#log.info({ concurrency: this.#limits.concurrency }, "run worker started");
  }

  /**
   * Stops taking messages at once, waits up to `stopGraceMs` for runs in flight, then
   * stops those still running (they end `failed/node_shutdown`, or are handed back if they
   * had not started executing) and waits for them to record it. Idempotent.
   */
  stop(): Promise<void> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async #stop(): Promise<void> {
    // Both at once: the slots take no run from the moment the stop begins. Awaiting the
    // receive loop first (its long poll) left them claiming meanwhile, and a run claimed
    // then started on a node that is going away (the split node-loss test saw one).
    await Promise.all([this.#slots.stopTaking(), this.#consumer.stopReceiving()]);
    const inflight = [...this.#consumer.inflight(), ...this.#slots.inflight()];
    if (inflight.length > 0) {
      this.#log.info({ runs: inflight.length }, "run worker stopping; waiting for runs in flight");
      const grace = new Promise<"timeout">((resolve) => {
        setTimeout(() => resolve("timeout"), this.#limits.stopGraceMs).unref();
      });
      const done = Promise.allSettled(inflight).then(() => "done" as const);
      if ((await Promise.race([done, grace])) === "timeout") {
        this.#log.warn("grace period over; stopping the runs still in flight");
        this.#shutdown.abort();
        await done;
      }
    }
    this.#shutdown.abort();
    // Each cleanup bounds itself (tree wait + destroy timeout): none is dropped on stop.
    await this.#cleanups.drain();
    await this.#batches.stop();
    await this.#cancels.stop();
    this.#log.info("run worker stopped");
  }

  async #handle(message: QueueMessage, context: MessageContext): Promise<void> {
    switch (message.type) {
      case "run.dispatch":
        return this.#dispatch(message, context);
      case "skills.refresh":
        if (this.#deps.skillsRefresh === undefined) {
          throw new WorkcellError(
            "unavailable",
            "This agent-host has no skills refresh handler: wire agent-host/skills into the run worker.",
          );
        }
        return this.#deps.skillsRefresh(message, context.stopping, context.requestId);
    }
  }

  /**
   * The message is a doorbell: it names a run id and nothing else is read from it (the
   * run's row in Postgres is the truth; a duplicate or stale ring finds the run no longer
   * pending and is dropped). A dispatch only puts the run in line: it waits in Postgres
   * (`waiting_since`) and the message goes, so a user's long queue never stands in front of another user's run in
   * SQS, and waiting costs no receive count (docs/decisions/0037). The slots then claim
   * in fair order, this run or another.
   */
  async #dispatch(message: RunDispatchMessage, context: MessageContext): Promise<void> {
    const runId = message.run_id;
    if (context.stopping.aborted) {
      await context.release();
      return;
    }
    // The delivery's context waits with the run: whichever node claims it continues it.
    const parked = await parkRun(
      this.#deps.db,
      runId,
      this.#deps.nodeId,
      injectTrace(this.#tracing, context.trace),
    );
    if (!parked.ok) {
      // A duplicate delivery, a run another node took, a finished or unknown run: the
      // message has done its job (or never had one).
      this.#log.info({ run_id: runId }, "dispatch dropped: run not pending");
      return;
    }
    this.#slots.wake();
  }

  /** True when the run's ending NOTIFYed the slots channel (recordOutcome's `ended`). */
  async #execute(claim: ClaimOutcome & { readonly ok: true }): Promise<boolean> {
    const { createdAt, startedAt } = claim.run;
    if (startedAt !== null) {
      // Both from the database clock (insert and claim): no skew between hosts.
      this.#metrics.runQueueWaitSeconds.observe(
        Math.max(0, (startedAt.getTime() - createdAt.getTime()) / 1000),
      );
    }
    // The trace of the delivery that parked the run (whichever node received it).
    const trace = extractTrace(this.#tracing, claim.run.traceContext ?? undefined);
    await inSpan(
      this.#tracing,
      "run.claim",
      {
        parent: trace,
        attributes: { "workcell.run_id": claim.run.runId, "workcell.attempt": claim.run.attempt },
      },
      async () => {},
    );
    const result = await executeRootRun(this.#executorDeps, claim, this.#shutdown.signal, trace);
    if (result.kind === "handed_back") await this.#redispatch(claim.run, result, trace);
    return result.kind === "ended";
  }

  /** Puts a handed-back run on the queue again; the dispatch sweeper is the backstop. */
  async #redispatch(
    run: AgentRun,
    result: RecordedRun & { kind: "handed_back" },
    trace: TraceContext,
  ) {
    try {
      await this.#deps.queue.send(
        serializeQueueMessage({ type: "run.dispatch", run_id: run.runId }),
        this.#limits.handBackDelaySeconds,
        AbortSignal.timeout(this.#limits.queueCallTimeoutMs),
        // The next node's work stays in the submission's trace.
        injectTrace(this.#tracing, trace),
      );
    } catch (error) {
      this.#log.warn(
        { err: error, ...runLogFields(run), reason: result.reason },
        "could not re-dispatch a handed-back run; the dispatch sweeper will",
      );
    }
  }
}
