import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { failRunsOfNode } from "../../shared/runs/fail-node-runs.ts";

/**
 * Runs a previous process of this node left running are over (node_lost): ending them
 * before the sandbox manager starts releases their sandboxes, so its reconcile pass
 * removes rather than adopts them.
 */
export async function endLeftRuns(
  db: Db,
  nodeId: string,
  metrics: WorkcellMetrics,
  logger: Logger,
): Promise<void> {
  const ended = await failRunsOfNode(db, nodeId);
  const endedRuns = ended.reduce((sum, scope) => sum + scope.runIds.length, 0);
  if (endedRuns > 0) metrics.runs.inc({ status: "failed" }, endedRuns);
  if (ended.length > 0) {
    logger.warn(
      { run_ids: ended.flatMap((s) => s.runIds) },
      "ended runs a previous process of this node left running (node_lost)",
    );
  }
}
