import { eq } from "drizzle-orm";
import { abortable } from "../../shared/async/abortable.ts";
import type { StoredNodeRuntime } from "../../shared/contracts/node-runtime.ts";
import type { Db } from "../../shared/db/client.ts";
import { nodes } from "../../shared/db/schema/nodes.ts";

/** Bound on one write of the runtime report (a single-row UPDATE). */
export const RECORD_RUNTIME_TIMEOUT_MS = 10_000;

/**
 * Writes this node's runtime report into its `nodes` row, where `GET /v1/admin/runtime`
 * reads it. Written twice per start: with the tiers' preflight at once (assets absent:
 * `verifying`), then with the Runtime Assets once verified. The whole report is replaced
 * each time, so a restart never shows a previous process's assets as current.
 */
export async function recordNodeRuntime(
  db: Db,
  nodeId: string,
  runtime: StoredNodeRuntime,
  signal: AbortSignal,
): Promise<void> {
  const bounded = AbortSignal.any([signal, AbortSignal.timeout(RECORD_RUNTIME_TIMEOUT_MS)]);
  await abortable(
    db.update(nodes).set({ runtime }).where(eq(nodes.nodeId, nodeId)),
    bounded,
    "node runtime report",
  );
}
