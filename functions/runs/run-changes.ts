import type { RunChange } from "../../shared/contracts/run.ts";
import type { AgentRun } from "../../shared/db/schema.ts";

/**
 * Where GET /v1/runs/{id}/changes gets the files a run changed in its Workdir. Only the
 * run worker sees the Workdir before and after a run, so it records them (run_changes);
 * the app reads them with `recordedRunChanges` (recorded-run-changes.ts) unless an entry
 * passes another source.
 */
export interface RunChangesSource {
  listChanges(run: AgentRun, signal: AbortSignal): Promise<RunChange[]>;
}

/** A source that knows no changes, for apps wired without the run_changes table. */
export function noRecordedChanges(): RunChangesSource {
  return { listChanges: async () => [] };
}
