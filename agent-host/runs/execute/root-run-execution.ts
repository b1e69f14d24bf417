import type { Logger } from "pino";
import type { AgentRun } from "../../../shared/db/schema.ts";
import { isTransientDatabaseError } from "../../../shared/db/transient-database-error.ts";
import { traceLogFields } from "../../../shared/telemetry/trace-log-fields.ts";
import { inSpan, ROOT_CONTEXT, type TraceContext } from "../../../shared/telemetry/tracing.ts";
import { isRunPause } from "../../approvals/record-pause.ts";
import { withAttachmentContext } from "../../attachments/attachment-context.ts";
import type { SandboxHandle } from "../../sandbox/sandbox-handle.ts";
import { TreeBatches } from "../change-batch/tree-batches.ts";
import { nextEventSeq, RunEventLog } from "../claim/run-event-log.ts";
import type { RunFence } from "../claim/run-fence.ts";
import { type RecordedRun, type RunOutcome, recordOutcome } from "../claim/run-recorder.ts";
import { databaseRetryOf } from "../run-limits.ts";
import { runLogFields } from "../run-log-fields.ts";
import { executeChildRun } from "./child-run-execution.ts";
import { driveRun } from "./drive-run.ts";
import { type Preparation, prepareRun } from "./prepare-run.ts";
import { loadRunContext } from "./run-context.ts";
import { RunControl, type StopReason } from "./run-control.ts";
import { stoppedBeforeStart } from "./run-ending.ts";
import type { RunExecutorDeps } from "./run-executor-deps.ts";
import { withRunWiring } from "./run-wiring.ts";
import { cleanupExecutionTree } from "./tree-cleanup.ts";

/** A claimed root run (claim/claim-waiting-run.ts). */
export interface ClaimedRun {
  readonly run: AgentRun;
  readonly fence: RunFence;
  /** When the claim was sent (claim/claim-run.ts ClaimOutcome); absent: the run's lease beats once first. */
  readonly claimedAt?: number;
}

/** A root run's outcome plus the sandbox it used, which the tree cleanup destroys. */
interface RootOutcome {
  readonly outcome: RunOutcome;
  readonly handle?: SandboxHandle;
}

/**
 * Runs a claimed root run to its end: prepares it (Workdir, outputs/, skills, sandbox),
 * drives the agent loop, records the outcome, then cleans the execution tree up.
 * `shutdown` aborting means this node stops: a run still preparing is handed back
 * (nothing ran), one already executing ends `failed/node_shutdown`.
 */
export async function executeRootRun(
  deps: RunExecutorDeps,
  claimed: ClaimedRun,
  shutdown: AbortSignal,
  parent: TraceContext = ROOT_CONTEXT,
): Promise<RecordedRun> {
  return inSpan(
    deps.tracing,
    "run.execute",
    { parent, attributes: { "workcell.run_id": claimed.run.runId } },
    async (span, trace) => {
      const recorded = await executeTraced(deps, claimed, shutdown, trace);
      span.setAttribute(
        "workcell.run_status",
        recorded.kind === "ended" ? recorded.ending.status : recorded.kind,
      );
      return recorded;
    },
  );
}

async function executeTraced(
  deps: RunExecutorDeps,
  { run, fence, claimedAt }: ClaimedRun,
  shutdown: AbortSignal,
  trace: TraceContext,
): Promise<RecordedRun> {
  // The run's lines carry its run.execute span's ids when tracing is on.
  const logger = deps.logger.child({ ...runLogFields(run), ...traceLogFields(trace) });
  const control = new RunControl();
  const claimed =
    claimedAt === undefined
      ? {}
      : { claimed: { sentAt: claimedAt, cancelRequested: run.cancelRequested } };
  let root: RootOutcome;
  try {
    root = await withRunWiring(
      deps,
      { runId: run.runId, fence, control, logger, shutdown, ...claimed },
      () => prepareAndDrive(deps, { run, fence, control, logger, trace }),
    );
  } catch (error) {
    // Errors of the drive are caught in prepareAndDrive: one here came before any command
    // (loading the run, preparing it). A database that dropped those statements (a
    // PostgreSQL restart) is no reason to fail a run nothing of which ran (issue 38).
    if (isTransientDatabaseError(error)) {
      logger.warn({ err: error }, "database unavailable while preparing; handing the run back");
      root = { outcome: { kind: "hand_back", reason: "database_unavailable" } };
    } else {
      logger.error({ err: error }, "run failed unexpectedly");
      root = { outcome: { kind: "crashed" } };
    }
  }
  // The terminal event is written here, in the transaction that sets the status.
  const recorded = await inSpan(deps.tracing, "run.finish", { parent: trace }, () =>
    recordOutcome(
      deps.db,
      {
        run,
        fence,
        logger,
        metrics: deps.metrics,
        maxHandBacks: deps.limits.maxHandBacks,
        notifySlotsAs: deps.nodeId,
        retry: { policy: databaseRetryOf(deps.limits), leaseTtlMs: deps.limits.leaseTtlMs },
      },
      root.outcome,
    ),
  );
  // A handed-back run is pending again and may be claimed anew: its scope is not ours.
  if (recorded.kind !== "handed_back") {
    const cleanup = () => cleanupTree(deps, run, root.handle);
    // With a pool, after the slot is free: nothing the next run needs waits on it (a next
    // turn of this scope claimed first is weighed by the cleanup's tree lock, as one
    // claimed on another slot always was). Without one (tests of the executor), inline.
    if (deps.cleanups !== undefined) await deps.cleanups.start(`tree ${run.runId}`, cleanup);
    else await cleanup().catch((error: unknown) => logTreeCleanupFailure(logger, error));
  }
  return recorded;
}

interface RootExecution extends ClaimedRun {
  readonly control: RunControl;
  readonly logger: Logger;
  readonly trace: TraceContext;
}

async function prepareAndDrive(
  deps: RunExecutorDeps,
  { run, fence, control, logger: rootLog, trace }: RootExecution,
): Promise<RootOutcome> {
  const { db, limits } = deps;
  const [nextSeq, context] = await Promise.all([
    nextEventSeq(db, run.runId),
    loadRunContext(db, run, limits),
  ]);
  const events = new RunEventLog({
    db,
    fence,
    nextSeq,
    retry: { policy: databaseRetryOf(limits), logger: rootLog },
  });
  let prepared: Preparation | undefined;
  try {
    control.signal.throwIfAborted();
    prepared = await inSpan(deps.tracing, "run.prepare", { parent: trace }, (_span, inner) =>
      prepareRun({ ...deps, logger: rootLog, trace: inner }, context, control.signal),
    );
  } catch (error) {
    if (control.reason === undefined) throw error;
  }
  const handle = prepared?.kind === "ready" ? prepared.handle : undefined;
  if (prepared === undefined || control.reason !== undefined) {
    const reason = control.reason as StopReason;
    // Preparing did nothing the run asked for: a stopping node gives it back for
    // another node instead of failing it.
    if (reason === "shutdown" && !control.leaseLost) {
      return { outcome: { kind: "hand_back", reason: "node_shutdown" }, handle };
    }
    return { outcome: { kind: "ended", ending: stoppedBeforeStart(reason), events }, handle };
  }
  if (prepared.kind === "hand_back") return { outcome: prepared };
  if (prepared.kind === "failed") {
    return {
      outcome: { kind: "ended", ending: { status: "failed", error: prepared.error }, events },
    };
  }
  const ready = prepared;
  const log = rootLog.child({
    sandbox_id: ready.handle.sandboxId,
    generation: ready.handle.generation,
  });
  log.info({ created: ready.created }, "run started");
  await deps.beforeRun?.(
    { run, fence, workdirPath: context.workdirPath, agent: context.agent, events, logger: log },
    deps.leasedCommands,
    control.signal,
  );
  const tree = new TreeBatches(run.runId);
  try {
    const ending = await driveRun(
      deps,
      {
        run,
        fence,
        control,
        events,
        depth: 0,
        tree,
        projectId: context.projectId,
        workdirPath: context.workdirPath,
        handle: ready.handle,
        skills: ready.skills,
        model: context.agent.model,
        maxTurns: context.agent.max_steps,
        history: context.history,
        input: run.input,
        // Built from the stored input on every execution, never from an earlier model
        // copy, so a run handed back and claimed again lists the attachments once; and
        // withAttachmentContext leaves a text that already ends with the block alone.
        visibleInput: withAttachmentContext(run.input, context.attachments, context.workdirPath),
        logger: log,
        trace,
      },
      (child, parent, signal) => executeChildRun(deps, child, parent, signal),
    );
    // Sub-agents have ended: every command of the tree has its batch, committed or kept.
    const unrepaired = await deps.leasedCommands.settle(tree, log);
    if (isRunPause(ending)) {
      return { outcome: { kind: "paused", paused: ending, events }, handle: ready.handle };
    }
    return {
      outcome: {
        kind: "ended",
        ending,
        events,
        unrepaired,
        settle: () => deps.leasedCommands.settle(tree, log),
      },
      handle: ready.handle,
    };
  } catch (error) {
    log.error({ err: error }, "run failed unexpectedly");
    return { outcome: { kind: "crashed" }, handle: ready.handle };
  }
}

/** One bounded attempt; it throws, so the pool can retry a transient failure. */
async function cleanupTree(
  deps: RunExecutorDeps,
  run: AgentRun,
  handle: SandboxHandle | undefined,
): Promise<void> {
  const { limits } = deps;
  await cleanupExecutionTree(
    deps,
    {
      runId: run.runId,
      uid: run.uid,
      runtimeScopeId: run.runtimeScopeId,
      originRequestId: run.originRequestId,
    },
    handle,
    AbortSignal.timeout(limits.treeCleanupWaitMs + limits.sandboxDestroyTimeoutMs),
  );
}

function logTreeCleanupFailure(logger: Logger, error: unknown): void {
  // The idle reaper and the reconciler remove what this could not.
  logger.error({ err: error }, "execution-tree cleanup failed");
}
