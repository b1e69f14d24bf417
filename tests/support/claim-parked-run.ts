import {
  claimWaitingRun,
  type WaitingClaim,
} from "../../agent-host/runs/claim/claim-waiting-run.ts";
import { parkRun } from "../../agent-host/runs/fair-share/park-run.ts";
import type { Db } from "../../shared/db/client.ts";

export type ParkedClaimRequest = {
  readonly runId: string;
  /** The claiming node: its `nodes` row must exist and be active, as for a worker. */
  readonly nodeId: string;
  readonly leaseTtlMs: number;
};

/**
 * Claims one run the way a node's worker does (agent-host/runs/README.md): the doorbell
 * parks it (parkRun: pending, waiting since now), then the fair claim takes it
 * (claimWaitingRun: pending → running, attempt + 1, lease, under the uid's slot lock and
 * the tree lock). The run must be the only one parked and unclaimed in the test's
 * database: a claim of another parked run is an error, not a silent success.
 */
export async function claimParkedRun(db: Db, request: ParkedClaimRequest): Promise<WaitingClaim> {
  const parked = await parkRun(db, request.runId, request.nodeId);
  if (!parked.ok) return { ok: false, reason: "none" };
  const claim = await claimWaitingRun(db, {
    nodeId: request.nodeId,
    leaseTtlMs: request.leaseTtlMs,
    // No uid limit in the way: the tests claim runs, they do not test fairness.
    defaultMaxConcurrentRuns: 1_000,
  });
  if (claim.ok && claim.run.runId !== request.runId) {
    throw new Error(`claimed ${claim.run.runId}, another parked run, instead of ${request.runId}`);
  }
  return claim;
}
