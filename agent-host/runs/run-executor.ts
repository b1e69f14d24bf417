import { and, eq } from "drizzle-orm";
import type { Logger } from "pino";
import type { TerminalRunStatus } from "../../shared/contracts/run.ts";
import type { Db } from "../../shared/db/client.ts";
import { type AgentRun, agentRuns, type RunError } from "../../shared/db/schema.ts";
import { domainReasonOf } from "../../shared/errors/domain-errors.ts";
import { withAttachmentContext } from "../attachments/attachment-context.ts";
import type { SandboxHandle } from "../sandbox/sandbox-handle.ts";
import type { UserWorkspaces } from "../workspace/index.ts";
import {
  type AgentLimits,
  type AgentToolsOptions,
  buildSystemPrompt,
  type ChatMessage,
  createAgentTools,
  runAgentLoop,
  SHELL_MODEL_NAME,
  type SubagentOutcome,
} from "./agent/index.ts";
import type { CancelWatcher } from "./cancel-watcher.ts";
import { releaseClaim } from "./claim-run.ts";
import type { ChildRun } from "./create-child-run.ts";
import { finishRun, type RunEnding } from "./finish-run.ts";
import type { ModelClientFactory } from "./model-client-factory.ts";
import { type Preparation, prepareRun } from "./prepare-run.ts";
import { loadRunContext } from "./run-context.ts";
import { RunControl, type StopReason } from "./run-control.ts";
import { runEndingOf, stoppedBeforeStart } from "./run-ending.ts";
import { nextEventSeq, RunEventLog } from "./run-event-log.ts";
import type { RunFence } from "./run-fence.ts";
import { RunLease } from "./run-lease.ts";
import type { RunWorkerLimits } from "./run-limits.ts";
import { createRunSubagentSpawner } from "./run-subagent-spawner.ts";
import { runWorkdirChanges } from "./run-workdir-changes.ts";
import { createSandboxExec, type RunSandboxes } from "./sandbox-exec-adapter.ts";
import type { SkillProjection } from "./skill-projection.ts";
import { cleanupExecutionTree } from "./tree-cleanup.ts";
import type { WorkdirChanges } from "./workdir-changes.ts";

export interface RunExecutorDeps {
  readonly db: Db;
  readonly sandboxes: RunSandboxes;
  readonly userWorkspaces: UserWorkspaces;
  readonly skillProjection: SkillProjection;
  readonly modelClientFactory: ModelClientFactory;
  readonly cancelWatcher: CancelWatcher;
  readonly nodeId: string;
  readonly logger: Logger;
  readonly limits: RunWorkerLimits;
  /** Tool options (bash timeouts, output caps) for every run. */
  readonly agentTools?: Omit<AgentToolsOptions, "subagents">;
  /** Agent loop bounds; a run's `agent.max_steps` overrides `maxTurns`. */
  readonly agentLimits?: Partial<AgentLimits>;
  /** Deployment text appended to every system prompt. */
  readonly systemPromptExtra?: string;
}

/** A claimed root run (claim-run.ts). */
export interface ClaimedRun {
  readonly run: AgentRun;
  readonly fence: RunFence;
}

export type RootRunResult =
  | { readonly kind: "ended"; readonly status: TerminalRunStatus; readonly error?: RunError }
  /** Nothing executed; the run is pending again and must be dispatched again. */
  | { readonly kind: "handed_back"; readonly reason: string }
  /** The run stopped being ours; nothing was written after that. */
  | { readonly kind: "lease_lost" };

/** What a run executes with once prepared; a sub-agent inherits most of it. */
interface Execution {
  readonly run: AgentRun;
  readonly fence: RunFence;
  readonly control: RunControl;
  readonly events: RunEventLog;
  readonly depth: number;
  readonly projectId: string;
  readonly workdirPath: string;
  readonly handle: SandboxHandle;
  readonly skills: readonly string[];
  readonly model: string | undefined;
  readonly maxTurns: number | undefined;
  readonly history: readonly ChatMessage[];
  /** The original user text (what is stored) and the model-visible variant. */
  readonly input: string;
  readonly visibleInput: string;
  readonly logger: Logger;
}

/**
 * Executes claimed runs on this node: prepares a root run (Workdir, outputs/, skills,
 * sandbox), runs the agent loop with its events persisted under the claim's fence,
 * runs sub-agents in-process in the same sandbox, honours cancels (LISTEN + heartbeat),
 * records the ending, and cleans the execution tree up when a root run ends.
 */
export class RunExecutor {
  readonly #deps: RunExecutorDeps;

  constructor(deps: RunExecutorDeps) {
    this.#deps = deps;
  }

  /**
   * Runs a claimed root run to its end. `shutdown` aborting means this node stops: a run
   * still preparing is handed back (nothing ran), one already executing ends
   * `failed/node_shutdown`.
   */
  async executeRoot(claimed: ClaimedRun, shutdown: AbortSignal): Promise<RootRunResult> {
    const { run, fence } = claimed;
    const log = this.#deps.logger.child({ uid: run.uid, run_id: run.runId });
    const control = new RunControl();
    const detach = this.#attach(run.runId, fence, control, log, shutdown);
    const used: { handle?: SandboxHandle } = {};
    let result: RootRunResult;
    try {
      result = await this.#runRoot(claimed, control, detach, used, log);
    } catch (error) {
      log.error({ err: error }, "run failed unexpectedly");
      result = await this.#failUnexpectedly(run, fence, detach, log);
    } finally {
      await detach.stop();
    }
    // A handed-back run is pending again and may be claimed anew: its scope is not ours.
    if (result.kind !== "handed_back") await this.#cleanup(run, used.handle, log);
    return result;
  }

  async #runRoot(
    { run, fence }: ClaimedRun,
    control: RunControl,
    detach: Attachment,
    used: { handle?: SandboxHandle },
    rootLog: Logger,
  ): Promise<RootRunResult> {
    const { db, limits } = this.#deps;
    await detach.lease.start();
    const events = new RunEventLog({ db, fence, nextSeq: await nextEventSeq(db, run.runId) });
    const context = await loadRunContext(db, run, limits);
    let prepared: Preparation | undefined;
    try {
      control.signal.throwIfAborted();
      prepared = await prepareRun({ ...this.#deps, logger: rootLog }, context, control.signal);
    } catch (error) {
      if (control.reason === undefined) throw error;
    }
    if (prepared?.kind === "ready") used.handle = prepared.handle;
    if (prepared === undefined || control.reason !== undefined) {
      const reason = control.reason as StopReason;
      // Preparing did nothing the run asked for: a stopping node gives it back for
      // another node instead of failing it.
      if (reason === "shutdown" && !control.leaseLost) {
        await detach.stop();
        return this.#handBack(fence, "node_shutdown", rootLog);
      }
      return this.#record(run, fence, events, detach, stoppedBeforeStart(reason), rootLog);
    }
    if (prepared.kind === "hand_back") {
      await detach.stop();
      return this.#handBack(fence, prepared.reason, rootLog);
    }
    if (prepared.kind === "failed") {
      const ending: RunEnding = { status: "failed", error: prepared.error };
      return this.#record(run, fence, events, detach, ending, rootLog);
    }
    const { handle } = prepared;
    const log = rootLog.child({ sandbox_id: handle.sandboxId, generation: handle.generation });
    log.info({ created: prepared.created }, "run started");
    const ending = await this.#drive({
      run,
      fence,
      control,
      events,
      depth: 0,
      projectId: context.projectId,
      workdirPath: context.workdirPath,
      handle,
      skills: prepared.skills,
      model: context.agent.model,
      maxTurns: context.agent.max_steps,
      history: context.history,
      input: run.input,
      // Built from the stored input on every execution, never from an earlier model copy,
      // so a run handed back and claimed again lists the attachments once; and
      // withAttachmentContext leaves a text that already ends with the block alone.
      visibleInput: withAttachmentContext(run.input, context.attachments, context.workdirPath),
      logger: log,
    });
    // Taken while the lease still heartbeats; a lost lease records nothing anyway.
    const changes =
      ending === undefined
        ? undefined
        : await runWorkdirChanges(
            { ...this.#deps, logger: log },
            { uid: run.uid, workdirPath: context.workdirPath },
            prepared.before,
          );
    return this.#record(run, fence, events, detach, ending, log, changes);
  }

  /** A sub-agent: committed and claimed by the spawner, run here in the parent's sandbox. */
  async #executeChild(
    child: ChildRun,
    parent: Execution,
    parentSignal: AbortSignal,
  ): Promise<SubagentOutcome> {
    const { db } = this.#deps;
    const { run, fence } = child;
    // From the worker's logger, not the parent's: pino would repeat a rebound run_id.
    const log = this.#deps.logger.child({
      uid: run.uid,
      run_id: run.runId,
      parent_run_id: parent.run.runId,
      sandbox_id: parent.handle.sandboxId,
      generation: parent.handle.generation,
    });
    const control = new RunControl();
    const onParentStop = () => {
      // Children end before their parent (ARCHITECTURE.md §4.5): the parent's tool call
      // waits for this child's ending, which this abort brings about.
      control.stop(parent.control.reason === "shutdown" ? "shutdown" : "cancel");
      // Visible to readers of the child while it winds down; the child's own fenced
      // ending decides its status.
      db.update(agentRuns)
        .set({ cancelRequested: true })
        .where(and(eq(agentRuns.runId, run.runId), eq(agentRuns.status, "running")))
        .catch((error: unknown) => log.warn({ err: error }, "could not flag the child cancelled"));
    };
    if (parentSignal.aborted) onParentStop();
    else parentSignal.addEventListener("abort", onParentStop, { once: true });
    const detach = this.#attach(run.runId, fence, control, log, undefined);
    const outcome = (ending: RunEnding | undefined): SubagentOutcome => {
      const base = { runId: run.runId, threadId: run.threadId };
      if (ending === undefined) {
        return {
          ...base,
          status: "failed",
          finalText: "",
          error: { code: "lease_lost", message: "The sub-agent run is no longer owned here." },
        };
      }
      return {
        ...base,
        status: ending.status,
        finalText: ending.status === "succeeded" ? (ending.finalText ?? "") : "",
        ...(ending.error === undefined ? {} : { error: ending.error }),
      };
    };
    try {
      await detach.lease.start();
      const events = new RunEventLog({ db, fence, nextSeq: 1 });
      const ending = await this.#drive({
        ...parent,
        run,
        fence,
        control,
        events,
        depth: parent.depth + 1,
        maxTurns: undefined,
        history: [],
        input: run.input,
        visibleInput: run.input,
        logger: log,
      });
      const recorded = await this.#record(run, fence, events, detach, ending, log);
      return outcome(recorded.kind === "ended" ? ending : undefined);
    } catch (error) {
      log.error({ err: error }, "sub-agent run failed unexpectedly");
      const recorded = await this.#failUnexpectedly(run, fence, detach, log);
      return outcome(recorded.kind === "ended" ? recorded : undefined);
    } finally {
      parentSignal.removeEventListener("abort", onParentStop);
      await detach.stop();
    }
  }

  /** Runs the agent loop of a prepared run; undefined when the lease was lost. */
  async #drive(x: Execution): Promise<RunEnding | undefined> {
    const { limits } = this.#deps;
    const workspace = await this.#deps.userWorkspaces.openUserWorkspace(x.run.uid, {
      signal: x.control.signal,
    });
    try {
      const model = this.#deps.modelClientFactory({
        runId: x.run.runId,
        uid: x.run.uid,
        input: x.input,
        depth: x.depth,
        ...(x.model === undefined ? {} : { model: x.model }),
        logger: x.logger,
      });
      const subagents =
        x.depth < limits.maxSubagentDepth
          ? createRunSubagentSpawner({
              db: this.#deps.db,
              nodeId: this.#deps.nodeId,
              leaseTtlMs: limits.leaseTtlMs,
              maxSubagentsPerRun: limits.maxSubagentsPerRun,
              parent: x.run,
              parentFence: x.fence,
              projectId: x.projectId,
              ...(x.model === undefined ? {} : { model: x.model }),
              runChild: (child, signal) => this.#executeChild(child, x, signal),
            })
          : undefined;
      // The shell model executes the message text: it gets the user's own words, never
      // the variant with the attachment list in front.
      const userText = model.name === SHELL_MODEL_NAME ? x.input : x.visibleInput;
      const result = await runAgentLoop({
        model,
        tools: createAgentTools({ ...this.#deps.agentTools, subagents: subagents !== undefined }),
        toolEnv: {
          sandbox: createSandboxExec(this.#deps.sandboxes, x.handle),
          workspace,
          workdirPath: x.workdirPath,
          ...(subagents === undefined ? {} : { subagents }),
        },
        systemPrompt: buildSystemPrompt({
          workdirPath: x.workdirPath,
          skills: x.skills,
          subagent: x.depth > 0,
          ...(this.#deps.systemPromptExtra === undefined
            ? {}
            : { extra: this.#deps.systemPromptExtra }),
        }),
        messages: [...x.history, { role: "user", content: userText }],
        limits: {
          ...this.#deps.agentLimits,
          ...(x.maxTurns === undefined ? {} : { maxTurns: x.maxTurns }),
        },
        signal: x.control.signal,
        // The terminal event is written by finishRun, in the transaction that sets the
        // status, so it is held back here (the loop emits it last).
        emit: (event) => (event.type === "run.completed" ? undefined : x.events.append(event)),
        logger: x.logger,
      });
      return runEndingOf(result, x.control);
    } catch (error) {
      if (domainReasonOf(error) === "lease_lost" || x.control.leaseLost) {
        x.control.stop("lease_lost");
        return undefined;
      }
      throw error;
    } finally {
      workspace.close();
    }
  }

  /**
   * Records an ending (undefined = lease lost: nothing to record), with a root run's
   * Workdir changes in the same fenced transaction. The heartbeat stops first, so it
   * cannot mistake the run's own ending for a lost lease.
   */
  async #record(
    run: AgentRun,
    fence: RunFence,
    events: RunEventLog,
    detach: Attachment,
    ending: RunEnding | undefined,
    log: Logger,
    changes?: WorkdirChanges,
  ): Promise<RootRunResult> {
    await detach.stop();
    if (ending === undefined || events.lost) return { kind: "lease_lost" };
    await events.settled();
    const ok = await finishRun(this.#deps.db, fence, run.threadId, events.nextSeq, ending, changes);
    if (!ok) {
      log.warn("run ended but its lease was lost; nothing recorded");
      return { kind: "lease_lost" };
    }
    log.info(
      {
        status: ending.status,
        ...(ending.error ? { error_code: ending.error.code } : {}),
        ...(changes === undefined
          ? {}
          : { changed_files: changes.items.length, changes_truncated: changes.truncated }),
      },
      "run ended",
    );
    return {
      kind: "ended",
      status: ending.status,
      ...(ending.error === undefined ? {} : { error: ending.error }),
    };
  }

  /** A bug or a lost database: try to end the run `failed/internal` (fenced). */
  async #failUnexpectedly(
    run: AgentRun,
    fence: RunFence,
    detach: Attachment,
    log: Logger,
  ): Promise<RootRunResult> {
    await detach.stop();
    try {
      const seq = await nextEventSeq(this.#deps.db, run.runId);
      const ok = await finishRun(this.#deps.db, fence, run.threadId, seq, {
        status: "failed",
        error: INTERNAL_ERROR,
      });
      return ok
        ? { kind: "ended", status: "failed", error: INTERNAL_ERROR }
        : { kind: "lease_lost" };
    } catch (error) {
      // The database is gone too: the lease will expire and the sweeper ends the run.
      log.error({ err: error }, "could not record the run's failure");
      return { kind: "lease_lost" };
    }
  }

  async #handBack(fence: RunFence, reason: string, log: Logger): Promise<RootRunResult> {
    const released = await releaseClaim(this.#deps.db, fence);
    if (!released) return { kind: "lease_lost" };
    log.info({ reason }, "run handed back before it executed");
    return { kind: "handed_back", reason };
  }

  async #cleanup(run: AgentRun, handle: SandboxHandle | undefined, log: Logger): Promise<void> {
    try {
      await cleanupExecutionTree(
        {
          db: this.#deps.db,
          sandboxes: this.#deps.sandboxes,
          logger: this.#deps.logger,
          limits: this.#deps.limits,
        },
        { runId: run.runId, uid: run.uid, runtimeScopeId: run.runtimeScopeId },
        handle,
        AbortSignal.timeout(
          this.#deps.limits.treeCleanupWaitMs + this.#deps.limits.sandboxDestroyTimeoutMs,
        ),
      );
    } catch (error) {
      // The idle reaper and the reconciler remove what this could not.
      log.error({ err: error }, "execution-tree cleanup failed");
    }
  }

  /**
   * Connects a run to what can stop it: its heartbeat (lease + cancel poll), the cancel
   * LISTEN, and (root runs) the node's shutdown. `stop()` undoes all of it; idempotent.
   */
  #attach(
    runId: string,
    fence: RunFence,
    control: RunControl,
    log: Logger,
    shutdown: AbortSignal | undefined,
  ): Attachment {
    const lease = new RunLease({
      db: this.#deps.db,
      fence,
      leaseTtlMs: this.#deps.limits.leaseTtlMs,
      heartbeatIntervalMs: this.#deps.limits.heartbeatIntervalMs,
      logger: log,
      onCancelRequested: () => control.stop("cancel"),
      onLost: () => control.stop("lease_lost"),
    });
    const unwatch = this.#deps.cancelWatcher.watch(runId, () => control.stop("cancel"));
    const onShutdown = () => control.stop("shutdown");
    if (shutdown?.aborted) onShutdown();
    else shutdown?.addEventListener("abort", onShutdown, { once: true });
    let stopped: Promise<void> | undefined;
    return {
      lease,
      stop() {
        stopped ??= (async () => {
          unwatch();
          shutdown?.removeEventListener("abort", onShutdown);
          await lease.stop();
        })();
        return stopped;
      },
    };
  }
}

const INTERNAL_ERROR: RunError = Object.freeze({
  code: "internal",
  message:
    "The run failed unexpectedly on the agent-host: retry it; if it persists, report it to the operator.",
});

interface Attachment {
  readonly lease: RunLease;
  stop(): Promise<void>;
}
