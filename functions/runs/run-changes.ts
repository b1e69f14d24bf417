import type { RunChange } from "../../shared/contracts/run.ts";
import type { AgentRun } from "../../shared/db/schema.ts";

/**
 * Where GET /v1/runs/{id}/changes gets the files a run changed in its Workdir. Only the
 * run worker sees the Workdir before and after a run, so it must record them; until a
 * recording exists (docs/decisions/0004-control-plane.md, "Run changes"), the app is
 * wired with `noRecordedChanges`.
 */
export interface RunChangesSource {
  listChanges(run: AgentRun, signal: AbortSignal): Promise<RunChange[]>;
}

/** Nothing is recorded yet, so no run has known changes. */
export function noRecordedChanges(): RunChangesSource {
  return { listChanges: async () => [] };
}
