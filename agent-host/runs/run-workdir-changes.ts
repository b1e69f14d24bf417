import type { Logger } from "pino";
import { domainReasonOf } from "../../shared/errors/domain-errors.ts";
import type { UserWorkspaces } from "../workspace/index.ts";
import type { RunWorkerLimits } from "./run-limits.ts";
import { diffWorkdirSnapshots, UNKNOWN_CHANGES, type WorkdirChanges } from "./workdir-changes.ts";
import {
  type SnapshotLimits,
  takeWorkdirSnapshot,
  type WorkdirSnapshot,
} from "./workdir-snapshot.ts";

/** The end snapshot is aborted at this multiple of its own time budget. */
const HARD_STOP_FACTOR = 2;

export interface RunWorkdirChangesDeps {
  readonly userWorkspaces: UserWorkspaces;
  readonly limits: Pick<
    RunWorkerLimits,
    "changesMaxEntries" | "changesMaxDepth" | "changesSnapshotTimeoutMs" | "changesMaxRecorded"
  >;
  readonly logger: Logger;
}

export function snapshotLimitsOf(
  limits: Pick<
    RunWorkerLimits,
    "changesMaxEntries" | "changesMaxDepth" | "changesSnapshotTimeoutMs"
  >,
): SnapshotLimits {
  return {
    maxEntries: limits.changesMaxEntries,
    maxDepth: limits.changesMaxDepth,
    timeoutMs: limits.changesSnapshotTimeoutMs,
  };
}

/**
 * The files a root run (with its sub-agents: they share its Workdir and end first) changed,
 * from `before` (prepare-run.ts) and a snapshot taken now, when the run has ended but its
 * ending is not recorded yet. Never throws: the changes are a report, so a snapshot that
 * cannot be taken makes them UNKNOWN_CHANGES (empty, truncated) rather than failing a run
 * that did its work.
 *
 * The Workdir is opened again by path, as the sandbox sees it. If the run removed the
 * Workdir itself, every file it had is reported deleted.
 */
export async function runWorkdirChanges(
  deps: RunWorkdirChangesDeps,
  place: { readonly uid: string; readonly workdirPath: string },
  before: WorkdirSnapshot | undefined,
): Promise<WorkdirChanges> {
  if (before === undefined) return UNKNOWN_CHANGES;
  const limits = snapshotLimitsOf(deps.limits);
  // Not the run's own signal: a cancelled run is already aborted and still records what it
  // changed. The snapshot stops itself at its time budget (checked between directories);
  // this only catches a call that hangs.
  const signal = AbortSignal.timeout(limits.timeoutMs * HARD_STOP_FACTOR);
  let after: WorkdirSnapshot;
  try {
    const workdir = await deps.userWorkspaces.openExistingWorkdir(place.uid, place.workdirPath, {
      signal,
    });
    try {
      after = await takeWorkdirSnapshot(workdir, limits, signal);
    } finally {
      workdir.close();
    }
  } catch (error) {
    if (domainReasonOf(error) === "workdir_missing") {
      after = { files: new Map(), dirs: new Set([""]), complete: new Set([""]), truncated: false };
    } else {
      deps.logger.warn({ err: error }, "workdir snapshot failed; the run's changes are unknown");
      return UNKNOWN_CHANGES;
    }
  }
  return diffWorkdirSnapshots(before, after, deps.limits.changesMaxRecorded);
}
