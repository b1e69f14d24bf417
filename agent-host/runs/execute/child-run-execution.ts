import { and, eq } from "drizzle-orm";
import { agentRuns } from "../../../shared/db/schema.ts";
import { isRunPause } from "../../approvals/record-pause.ts";
import type { SubagentOutcome } from "../agent/index.ts";
import type { RunEnding } from "../claim/finish-run.ts";
import { RunEventLog } from "../claim/run-event-log.ts";
import { type RunOutcome, recordOutcome } from "../claim/run-recorder.ts";
import { runLogFields } from "../run-log-fields.ts";
import type { ChildRun } from "./create-child-run.ts";
import { driveRun, type Execution } from "./drive-run.ts";
import { RunControl } from "./run-control.ts";
import type { RunExecutorDeps } from "./run-executor-deps.ts";
import { withRunWiring } from "./run-wiring.ts";

/**
 * A sub-agent: committed and claimed by the spawner, run here in the parent's sandbox
 * with its own lease, cancel and events. It ends before its parent does (docs/architecture.md
 * §4.5): the parent stopping stops it, and the parent's tool call waits for its ending.
 */
export async function executeChildRun(
  deps: RunExecutorDeps,
  child: ChildRun,
  parent: Execution,
  parentSignal: AbortSignal,
): Promise<SubagentOutcome> {
  const { db } = deps;
  const { run, fence } = child;
  // From the worker's logger, not the parent's: pino would repeat a rebound run_id.
  const logger = deps.logger.child({
    ...runLogFields(run),
    parent_run_id: parent.run.runId,
    sandbox_id: parent.handle.sandboxId,
    generation: parent.handle.generation,
  });
  const control = new RunControl();
  const onParentStop = () => {
    control.stop(parent.control.reason === "shutdown" ? "shutdown" : "cancel");
    // Visible to readers of the child while it winds down; the child's own fenced
    // ending decides its status.
    db.update(agentRuns)
      .set({ cancelRequested: true })
      .where(and(eq(agentRuns.runId, run.runId), eq(agentRuns.status, "running")))
      .catch((error: unknown) => logger.warn({ err: error }, "could not flag the child cancelled"));
  };
  if (parentSignal.aborted) onParentStop();
  else parentSignal.addEventListener("abort", onParentStop, { once: true });
  let outcome: RunOutcome;
  try {
    outcome = await withRunWiring(deps, { runId: run.runId, fence, control, logger }, async () => {
      const events = new RunEventLog({ db, fence, nextSeq: 1 });
      const ending = await driveRun(
        deps,
        {
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
          logger,
        },
        (grandchild, self, signal) => executeChildRun(deps, grandchild, self, signal),
      );
      // Sub-agents get no approval policy (drive-run.ts), so they never pause.
      if (isRunPause(ending)) throw new Error("a sub-agent paused for approval");
      return { kind: "ended", ending, events };
    });
  } catch (error) {
    logger.error({ err: error }, "sub-agent run failed unexpectedly");
    outcome = { kind: "crashed" };
  } finally {
    parentSignal.removeEventListener("abort", onParentStop);
  }
  const recorded = await recordOutcome(db, { run, fence, logger, metrics: deps.metrics }, outcome);
  return subagentOutcomeOf(child, recorded.kind === "ended" ? recorded.ending : undefined);
}

/** What the parent's `spawn_subagent` call returns; undefined ending = lease lost. */
function subagentOutcomeOf({ run }: ChildRun, ending: RunEnding | undefined): SubagentOutcome {
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
}
