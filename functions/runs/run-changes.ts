import type { RunChangeList } from "../../shared/contracts/run.ts";
import type { AgentRun } from "../../shared/db/schema.ts";

/**
 * Where GET /v1/runs/{id}/changes gets the files a run changed in its Workdir: the run
 * worker commits one change batch per command (docs/decisions/0014) and the app unions
 * them with `recordedRunChanges` (recorded-run-changes.ts) unless an entry passes another
 * source. `batchId` narrows to one command's batch; undefined = no such batch of this run.
 */
export interface RunChangesSource {
  listChanges(
    run: AgentRun,
    signal: AbortSignal,
    options?: { readonly batchId?: string },
  ): Promise<RunChangeList | undefined>;
}
