import type { Logger } from "pino";
import {
  type QueueMessage,
  type RunDispatchMessage,
  type SkillsRefreshMessage,
  serializeQueueMessage,
} from "../../shared/contracts/queue-message.ts";
import type { Db } from "../../shared/db/client.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { UserWorkspaces } from "../workspace/index.ts";
import type { AgentLimits, AgentToolsOptions } from "./agent/index.ts";
import { CancelWatcher } from "./cancel-watcher.ts";
import { RunBatches } from "./change-batch/run-batches.ts";
import { claimRun } from "./claim-run.ts";
import type { ListenFn } from "./listen.ts";
import type { ModelClientFactory } from "./model-client-factory.ts";
import { type MessageContext, RunConsumer } from "./run-consumer.ts";
import { type RootRunResult, RunExecutor } from "./run-executor.ts";
import { type RunWorkerLimits, resolveRunWorkerLimits } from "./run-limits.ts";
import type { RunSandboxes } from "./run-sandboxes.ts";
import type { ShellFor } from "./sandbox-exec-adapter.ts";
import type { SkillProjection } from "./skill-projection.ts";
import type { WorkQueue } from "./work-queue.ts";

/** Everything the run worker needs, wired once in agent-host's main.ts. */
export interface RunWorkerDeps {
  readonly db: Db;
  /** The run queue (`run.dispatch` and `skills.refresh` messages): createSqsWorkQueue. */
  readonly queue: WorkQueue;
  /** This node's SandboxManager (started: reconciled, reaper running). */
  readonly sandboxManager: RunSandboxes;
  /** The bash tool's shell: the Runtime Assets' bash, or why it is unavailable. */
  readonly shell?: ShellFor;
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
  readonly limits?: Partial<RunWorkerLimits>;
  /**
   * LISTEN for cancel notifications (postgresListen(sql), or PGlite's). Without it
   * cancels are noticed at the next heartbeat only.
   */
  readonly listen?: ListenFn;
  /** Handles `skills.refresh` messages from the same queue; without it they are left for retry. */
  readonly skillsRefresh?: (message: SkillsRefreshMessage, signal: AbortSignal) => Promise<void>;
  readonly agentTools?: Omit<AgentToolsOptions, "subagents">;
  readonly agentLimits?: Partial<AgentLimits>;
  readonly systemPromptExtra?: string;
}

/**
 * The run worker of one agent-host: consumes the run queue, claims each dispatched run in
 * Postgres (at-least-once in, exactly-once effect: a duplicate delivery finds the run no
 * longer pending and is dropped), executes it through RunExecutor, and on stop lets runs
 * finish (bounded by `stopGraceMs`) before stopping the rest.
 */
export class RunWorker {
  readonly #deps: RunWorkerDeps;
  readonly #limits: RunWorkerLimits;
  readonly #log: Logger;
  readonly #cancels: CancelWatcher;
  readonly #executor: RunExecutor;
  readonly #batches: RunBatches;
  readonly #consumer: RunConsumer;
  /** Aborted when the grace period of stop() is over: runs still executing are stopped. */
  readonly #shutdown = new AbortController();
  #started = false;
  #stopped: Promise<void> | undefined;

  constructor(deps: RunWorkerDeps) {
    this.#deps = deps;
    this.#limits = resolveRunWorkerLimits(deps.limits);
    this.#log = deps.logger.child({ component: "run-worker", node_id: deps.nodeId });
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
    });
    this.#executor = new RunExecutor({
      leasedCommands: this.#batches.commands,
      db: deps.db,
      sandboxes: deps.sandboxManager,
      userWorkspaces: deps.userWorkspaces,
      skillProjection: deps.skillProjection,
      modelClientFactory: deps.modelClientFactory,
      cancelWatcher: this.#cancels,
      nodeId: deps.nodeId,
      logger: this.#log,
      limits: this.#limits,
      ...(deps.shell === undefined ? {} : { shell: deps.shell }),
      ...(deps.agentTools === undefined ? {} : { agentTools: deps.agentTools }),
      ...(deps.agentLimits === undefined ? {} : { agentLimits: deps.agentLimits }),
      ...(deps.systemPromptExtra === undefined
        ? {}
        : { systemPromptExtra: deps.systemPromptExtra }),
    });
    this.#consumer = new RunConsumer({
      queue: deps.queue,
      handle: (message, context) => this.#handle(message, context),
      logger: this.#log,
      limits: this.#limits,
    });
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
    await this.#consumer.stopReceiving();
    const inflight = this.#consumer.inflight();
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
        return this.#deps.skillsRefresh(message, context.stopping);
    }
  }

  async #dispatch(message: RunDispatchMessage, context: MessageContext): Promise<void> {
    const runId = message.run_id;
    if (context.stopping.aborted) {
      await context.release();
      return;
    }
    const claim = await claimRun(this.#deps.db, {
      runId,
      nodeId: this.#deps.nodeId,
      leaseTtlMs: this.#limits.leaseTtlMs,
    });
    if (!claim.ok) {
      // A duplicate delivery, a run another node took, a finished or unknown run: the
      // message has done its job (or never had one).
      this.#log.info({ run_id: runId, reason: claim.reason }, "dispatch dropped: run not pending");
      return;
    }
    // From here the run's fate is in Postgres (lease, sweeper), not in the message.
    await context.ack().catch((error: unknown) => {
      this.#log.warn({ err: error, run_id: runId }, "could not delete a claimed run's message");
    });
    const result = await this.#executor.executeRoot(claim, this.#shutdown.signal);
    if (result.kind === "handed_back") await this.#redispatch(runId, result);
  }

  /** Puts a handed-back run on the queue again; the dispatch sweeper is the backstop. */
  async #redispatch(runId: string, result: RootRunResult & { kind: "handed_back" }) {
    try {
      await this.#deps.queue.send(
        serializeQueueMessage({ type: "run.dispatch", run_id: runId }),
        this.#limits.handBackDelaySeconds,
        AbortSignal.timeout(this.#limits.queueCallTimeoutMs),
      );
    } catch (error) {
      this.#log.warn(
        { err: error, run_id: runId, reason: result.reason },
        "could not re-dispatch a handed-back run; the dispatch sweeper will",
      );
    }
  }
}
