import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import { type DatabaseRetry, retryDatabase } from "../../../shared/db/database-retry.ts";
import type { AgentRun, RunError } from "../../../shared/db/schema.ts";
import type { WorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import { type RunPause, recordPause } from "../../approvals/record-pause.ts";
import type { ChangeBatch } from "../change-batch/change-batch.ts";
import { releaseClaim } from "./claim-run.ts";
import { finishRun, type RunEnding } from "./finish-run.ts";
import { finishRunRetried } from "./finish-run-retried.ts";
import { recordCrashRetried } from "./record-crash-retried.ts";
import { nextEventSeq, type RunEventLog } from "./run-event-log.ts";
import type { RunFence } from "./run-fence.ts";

/** What an execution (root or child) came to, before it is recorded. */
export type RunOutcome =
  /** The run ran (or was stopped); `ending` undefined means the lease was lost. */
  | {
      readonly kind: "ended";
      readonly ending: RunEnding | undefined;
      readonly events: RunEventLog;
      /** A root run's change batches still unrepaired at its end (placeholders). */
      readonly unrepaired?: readonly ChangeBatch[];
      /** Commits the kept batches again (leased-commands.ts settle) when the ending is retried. */
      readonly settle?: () => Promise<readonly ChangeBatch[]>;
    }
  /** Nothing executed and another try may work: give the claim back. */
  | { readonly kind: "hand_back"; readonly reason: string }
  /** A bug or a lost database: end the run `failed/internal` if it is still ours. */
  | { readonly kind: "crashed" }
  /** A root run's call waits for a person (../approvals/). */
  | { readonly kind: "paused"; readonly paused: RunPause; readonly events: RunEventLog };

export type RecordedRun =
  | { readonly kind: "ended"; readonly ending: RunEnding }
  /** Nothing executed; the run is pending again and must be dispatched again. */
  | { readonly kind: "handed_back"; readonly reason: string }
  /** The run stopped being ours; nothing was written after that. */
  | { readonly kind: "lease_lost" }
  /** The run awaits approval: no node owns it until a person decides. */
  | { readonly kind: "paused" };

export interface RecordedTarget {
  readonly run: AgentRun;
  readonly fence: RunFence;
  readonly logger: Logger;
  readonly metrics: Pick<WorkcellMetrics, "runs" | "runHandBacks" | "runLeaseLosses">;
  /**
   * Hand-backs allowed (run-limits.ts maxHandBacks): a run claimed more than this many
   * times that would be handed back again fails `hand_back_limit` instead, so nothing
   * bounces for ever. Undefined: unbounded (sub-agents are never handed back).
   */
  readonly maxHandBacks?: number;
  /**
   * A root run: this node's id, NOTIFYed on the slots channel by the ending's own
   * statement (finishRun), so an `ended` result means the other nodes were told.
   */
  readonly notifySlotsAs?: string;
  /**
   * A completed run's ending is retried while the database does not answer, its lease
   * extended by each retry that reaches it (finish-run-retried.ts, decision 0112).
   * Undefined: tried once, as sub-agents' endings are (their root's ending waits for them).
   */
  readonly retry?: { readonly policy: DatabaseRetry; readonly leaseTtlMs: number };
}

/** The ending of a run that could not be placed on any node after `maxHandBacks` tries. */
export function handBackLimitError(reason: string, handBacks: number): RunError {
  return {
    code: "hand_back_limit",
    message: `The run was handed back ${handBacks} times without starting (last reason: ${reason}), so it was ended; nothing of it ran. Check GET /v1/admin/nodes for ready nodes, then submit it again.`,
  };
}

export const INTERNAL_ERROR: RunError = Object.freeze({
  code: "internal",
  message:
    "The run failed unexpectedly on the agent-host: retry it; if it persists, report it to the operator.",
});

/**
 * Records an outcome under the claim's fence. Called once the run's wiring has stopped
 * (withRunWiring), so no heartbeat races the ending. A failure to record an ending or a
 * hand-back is itself a crash: the run is then ended `failed/internal` if still ours.
 */
export async function recordOutcome(
  db: Db,
  target: RecordedTarget,
  outcome: RunOutcome,
): Promise<RecordedRun> {
  const recorded = await recordOnce(db, target, outcome);
  // Counted once the outcome is committed (or known lost), whichever path recorded it.
  switch (recorded.kind) {
    case "ended":
      target.metrics.runs.inc({ status: recorded.ending.status });
      break;
    case "handed_back":
      target.metrics.runHandBacks.inc();
      break;
    case "lease_lost":
      target.metrics.runLeaseLosses.inc();
      break;
    case "paused":
      break;
  }
  return recorded;
}

async function recordOnce(
  db: Db,
  target: RecordedTarget,
  outcome: RunOutcome,
): Promise<RecordedRun> {
  if (outcome.kind === "crashed") return recordCrash(db, target);
  try {
    if (outcome.kind === "paused") return await recordPaused(db, target, outcome);
    return outcome.kind === "ended"
      ? await recordEnding(db, target, outcome)
      : await handBack(db, target, outcome.reason);
  } catch (error) {
    target.logger.error({ err: error }, "run failed unexpectedly while being recorded");
    return recordCrash(db, target);
  }
}

async function recordEnding(
  db: Db,
  { run, fence, logger, notifySlotsAs, retry }: RecordedTarget,
  { ending, events, unrepaired, settle }: RunOutcome & { kind: "ended" },
): Promise<RecordedRun> {
  if (ending === undefined || events.lost) return { kind: "lease_lost" };
  await events.settled();
  const ok =
    retry === undefined
      ? await finishRun(db, fence, run.threadId, events.nextSeq, ending, unrepaired, notifySlotsAs)
      : await finishRunRetried({
          db,
          fence,
          threadId: run.threadId,
          seq: events.nextSeq,
          ending,
          unrepaired: unrepaired ?? [],
          ...(settle === undefined ? {} : { settle }),
          ...(notifySlotsAs === undefined ? {} : { notifySlotsAs }),
          retry: retry.policy,
          leaseTtlMs: retry.leaseTtlMs,
          logger,
        });
  if (!ok) {
    logger.warn("run ended but its lease was lost; nothing recorded");
    return { kind: "lease_lost" };
  }
  logger.info(
    {
      status: ending.status,
      ...(ending.error ? { error_code: ending.error.code } : {}),
      ...(unrepaired === undefined || unrepaired.length === 0
        ? {}
        : { unrepaired_change_batches: unrepaired.map((b) => b.batchId) }),
    },
    "run ended",
  );
  return { kind: "ended", ending };
}

async function recordPaused(
  db: Db,
  { fence, logger, notifySlotsAs }: RecordedTarget,
  { paused, events }: RunOutcome & { kind: "paused" },
): Promise<RecordedRun> {
  if (events.lost) return { kind: "lease_lost" };
  await events.settled();
  if (!(await recordPause(db, fence, events.nextSeq, paused, notifySlotsAs ?? ""))) {
    return { kind: "lease_lost" };
  }
  const call = paused.pause.pendingCalls[0];
  logger.info({ tool: call?.name, tool_call_id: call?.id }, "run awaits approval");
  return { kind: "paused" };
}

async function recordCrash(
  db: Db,
  { run, fence, logger, notifySlotsAs, retry }: RecordedTarget,
): Promise<RecordedRun> {
  const ending: RunEnding = { status: "failed", error: INTERNAL_ERROR };
  try {
    // Retried like an ending (decision 0169), where the target retries its ending.
    const ok =
      retry === undefined
        ? await finishRun(
            db,
            fence,
            run.threadId,
            await nextEventSeq(db, run.runId),
            ending,
            [],
            notifySlotsAs,
          )
        : await recordCrashRetried({
            db,
            fence,
            threadId: run.threadId,
            ending,
            ...(notifySlotsAs === undefined ? {} : { notifySlotsAs }),
            retry: retry.policy,
            leaseTtlMs: retry.leaseTtlMs,
            logger,
          });
    return ok ? { kind: "ended", ending } : { kind: "lease_lost" };
  } catch (error) {
    // The database stayed away past the retries (or no retry): the lease will expire and
    // the sweeper ends the run.
    logger.error({ err: error }, "could not record the run's failure");
    return { kind: "lease_lost" };
  }
}

async function handBack(
  db: Db,
  { run, fence, logger, maxHandBacks, notifySlotsAs, retry }: RecordedTarget,
  reason: string,
): Promise<RecordedRun> {
  // attempt counts claims; every earlier claim of a run that never started ended in a
  // hand-back, so this one would be hand-back number `attempt`.
  if (maxHandBacks !== undefined && fence.attempt > maxHandBacks) {
    const ending: RunEnding = {
      status: "failed",
      error: handBackLimitError(reason, fence.attempt - 1),
    };
    const seq = await nextEventSeq(db, run.runId);
    if (!(await finishRun(db, fence, run.threadId, seq, ending, [], notifySlotsAs))) {
      return { kind: "lease_lost" };
    }
    logger.warn({ reason, attempt: fence.attempt }, "run failed: hand-back limit reached");
    return { kind: "ended", ending };
  }
  // Retried like an ending (decision 0112): a hand-back the database did not take would
  // leave the run to the lease expiry and the sweeper's node_lost.
  const released =
    retry === undefined
      ? await releaseClaim(db, fence)
      : await retryDatabase(retry.policy, "run hand-back", logger, () => releaseClaim(db, fence));
  if (!released) return { kind: "lease_lost" } as const;
  logger.info({ reason }, "run handed back before it executed");
  return { kind: "handed_back", reason } as const;
}
