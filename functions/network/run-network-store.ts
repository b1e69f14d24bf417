import { and, asc, eq } from "drizzle-orm";
import type { NetworkRequest } from "../../shared/contracts/network.ts";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { networkRequests } from "../../shared/db/schema.ts";
import { MAX_NETWORK_REQUESTS_PER_RUN } from "../../shared/network/network-request-bounds.ts";
import { isoTime } from "../db/iso-time.ts";

/**
 * The audit rows of the caller's run, oldest first. The uid is in the filter as well as
 * the run id (a row carries its run's uid, network_requests_run_fk), so another tenant's
 * rows are never read even with a guessed run id.
 */
export async function listRunNetwork(
  db: DbOrTransaction,
  uid: string,
  runId: string,
): Promise<{ items: NetworkRequest[]; truncated: boolean }> {
  const rows = await db
    .select()
    .from(networkRequests)
    .where(and(eq(networkRequests.runId, runId), eq(networkRequests.uid, uid)))
    .orderBy(asc(networkRequests.id))
    .limit(MAX_NETWORK_REQUESTS_PER_RUN);
  return {
    items: rows.map((row) => ({
      host: row.host,
      port: row.port,
      address: row.address,
      protocol: row.protocol as NetworkRequest["protocol"],
      decision: row.decision,
      reason: row.reason,
      bytes_up: row.bytesUp,
      bytes_down: row.bytesDown,
      duration_ms: row.durationMs,
      started_at: isoTime(row.startedAt),
    })),
    // The writer stops at the bound, so a full list means later connections were only counted.
    truncated: rows.length >= MAX_NETWORK_REQUESTS_PER_RUN,
  };
}
