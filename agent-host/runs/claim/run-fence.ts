import { and, eq, type SQL } from "drizzle-orm";
import { agentRuns } from "../../../shared/db/schema.ts";

/**
 * The fencing token of one claimed run (docs/architecture.md §4.8): the claim incremented
 * `attempt`, and every later write of this worker for the run is conditional on
 * (run_id, attempt, status = running). A worker whose lease was taken away (the sweeper
 * ended the run `node_lost`, another claim won) matches zero rows and writes nothing.
 */
export interface RunFence {
  readonly runId: string;
  readonly uid: string;
  readonly attempt: number;
}

/** WHERE clause of a fenced write. */
export function fencedRun(fence: RunFence): SQL {
  return and(
    eq(agentRuns.runId, fence.runId),
    eq(agentRuns.attempt, fence.attempt),
    eq(agentRuns.status, "running"),
  ) as SQL;
}
