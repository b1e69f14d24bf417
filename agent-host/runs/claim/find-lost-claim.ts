import { eq } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import { type DatabaseRetry, retryDatabase } from "../../../shared/db/database-retry.ts";
import { agentRuns } from "../../../shared/db/schema.ts";
import { isTransientDatabaseError } from "../../../shared/db/transient-database-error.ts";

/** How a claim whose answer was lost is looked up (decision 0150). */
export interface LostClaimLookup {
  readonly retry: DatabaseRetry;
  readonly logger: Logger;
}

type ClaimedRow = typeof agentRuns.$inferSelect;

/**
 * A claim's transaction failed with a transient error (the connection went away around its
 * COMMIT): the claim may have committed without this node hearing it (decision 0150). The
 * run is read again, waiting for the database within `retry`: running, owned by this node
 * at the attempt after the candidate's means the claim is ours, and the caller takes it up
 * as if the answer had come (the fill is this node's one claimer: one RunWorker per node
 * id, so no other claim in this node's name can have made that attempt). Undefined: not
 * claimed by us (another claim came between, or ours rolled back: nothing to take up).
 * Rethrows the claim's own error when the error was not transient or the database did not
 * answer within the retry's bound (the run's lease then decides, as before).
 */
export async function findLostClaim(
  db: Db,
  claim: { readonly runId: string; readonly nodeId: string; readonly attemptBefore: number },
  error: unknown,
  lookup: LostClaimLookup | undefined,
): Promise<ClaimedRow | undefined> {
  if (lookup === undefined) throw error;
  const log = lookup.logger.child({ run_id: claim.runId, attempt_before: claim.attemptBefore });
  if (!isTransientDatabaseError(error)) {
    log.warn({ err: error }, "claiming a waiting run failed (not a lost answer)");
    throw error;
  }
  const [row] = await retryDatabase(
    lookup.retry,
    "looking up a claim whose answer was lost",
    log,
    () => db.select().from(agentRuns).where(eq(agentRuns.runId, claim.runId)),
  );
  const ours =
    row !== undefined &&
    row.status === "running" &&
    row.ownerNode === claim.nodeId &&
    row.attempt === claim.attemptBefore + 1;
  log.warn(
    { err: error, status: row?.status, owner_node: row?.ownerNode, attempt: row?.attempt, ours },
    ours
      ? "a claim whose answer was lost had committed; taking the run up"
      : "a claim whose answer was lost had not committed for this node",
  );
  return ours ? row : undefined;
}
