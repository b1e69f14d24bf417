import type { Logger } from "pino";
import type { AgentOptions } from "../../shared/contracts/run.ts";
import type { AgentRun } from "../../shared/db/schema.ts";
import type { LeasedCommands } from "../runs/change-batch/leased-commands.ts";
import type { RunEventLog } from "../runs/claim/run-event-log.ts";
import type { RunFence } from "../runs/claim/run-fence.ts";
import type { Checkpoints } from "./checkpoints.ts";

/** What the root execution hands the hook once its Workdir and sandbox are ready. */
export interface BeforeRunInput {
  readonly run: AgentRun;
  readonly fence: RunFence;
  readonly workdirPath: string;
  readonly agent: AgentOptions;
  readonly events: Pick<RunEventLog, "append">;
  readonly logger: Logger;
}

export type BeforeRunCheckpoint = (
  input: BeforeRunInput,
  leased: Pick<LeasedCommands, "withLease">,
  signal: AbortSignal,
) => Promise<void>;

/**
 * The before-each-run checkpoint (docs/architecture.md §16): when the run's
 * `agent.checkpoint` says so (default: on where this node reflinks), the Workdir is
 * checkpointed under the run's own Execution Lease before its first command, so no
 * command of another run of the Workdir writes meanwhile (it waits), and a
 * `checkpoint.created` event names it: "Undo this run" restores it. A checkpoint that
 * cannot be taken (quota, a Workdir too large) is logged and the run goes on without one.
 */
export function beforeRunCheckpoint(checkpoints: Checkpoints): BeforeRunCheckpoint {
  return async ({ run, fence, workdirPath, agent, events, logger }, leased, signal) => {
    if (!(agent.checkpoint ?? checkpoints.mode === "reflink")) return;
    try {
      const started = performance.now();
      let granted = started;
      const row = await leased.withLease(fence, workdirPath, signal, () => {
        granted = performance.now();
        return checkpoints.take(
          { uid: run.uid, threadId: run.threadId, workdirPath },
          { source: "run", runId: run.runId },
          signal,
        );
      });
      if (row === undefined) return;
      // What a checkpoint adds to a run's start (issue 39's warm-turn bench).
      logger.info(
        {
          checkpoint_id: row.checkpointId,
          shared: row.storeId !== null,
          lease_wait_ms: Math.round(granted - started),
          take_and_release_ms: Math.round(performance.now() - granted),
        },
        "checkpoint taken before the run",
      );
      await events.append({
        type: "checkpoint.created",
        data: {
          checkpoint_id: row.checkpointId,
          files: row.files,
          bytes: row.bytes,
          mode: row.mode,
        },
      });
    } catch (err) {
      if (signal.aborted) return;
      logger.warn({ err }, "no checkpoint before the run; it runs without one");
    }
  };
}
