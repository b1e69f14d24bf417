import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import { commitChangeBatch } from "./commit-change-batch.ts";
import type { RepairRecords } from "./repair-records.ts";

export interface RepairPassDeps {
  readonly db: Db;
  readonly records: RepairRecords;
  readonly logger: Logger;
}

export interface RepairPassResult {
  /** Written by this pass. */
  readonly committed: number;
  /** Already in Postgres (an earlier commit or pass): only the record was removed. */
  readonly alreadyCommitted: number;
  /** Still kept: the commit failed again. */
  readonly failed: number;
}

/**
 * Commits every kept batch (of `runId` only, when given) and removes its record after the
 * commit. Exactly once: the commit is idempotent on the batch id, so a pass that dies
 * between commit and removal, or two nodes' passes racing, write each fact once.
 */
export async function runRepairPass(
  deps: RepairPassDeps,
  runId?: string,
): Promise<RepairPassResult> {
  const { batches, unreadable } = await deps.records.list();
  if (unreadable.length > 0) {
    deps.logger.error(
      { files: unreadable, dir: deps.records.dir },
      "change batch repair records that cannot be read were left in place; inspect them",
    );
  }
  let committed = 0;
  let alreadyCommitted = 0;
  let failed = 0;
  for (const batch of batches) {
    if (runId !== undefined && batch.runId !== runId && batch.rootRunId !== runId) continue;
    try {
      const outcome = await commitChangeBatch(deps.db, batch, { repaired: true });
      await deps.records.remove(batch.batchId);
      if (outcome === "committed") committed++;
      else alreadyCommitted++;
    } catch (error) {
      failed++;
      deps.logger.warn(
        { err: error, batch_id: batch.batchId, run_id: batch.runId },
        "change batch repair failed; it stays kept for the next pass",
      );
    }
  }
  return { committed, alreadyCommitted, failed };
}
