import { sql } from "drizzle-orm";
import type { Db } from "../../shared/db/client.ts";
import { nodes } from "../../shared/db/schema/nodes.ts";

/**
 * Records this agent-host in `nodes` before anything that needs the row (the sandbox
 * manager's quiescence lock, the run worker's claims). A restart updates the address
 * and start time but keeps `state`: a node an operator quiesced stays quiesced until
 * it is resumed, whatever happened to the process in between.
 */
export async function registerNode(
  db: Db,
  node: { nodeId: string; dataPlaneUrl: string },
): Promise<void> {
  await db
    .insert(nodes)
    .values({ nodeId: node.nodeId, dataPlaneUrl: node.dataPlaneUrl })
    .onConflictDoUpdate({
      target: nodes.nodeId,
      set: {
        dataPlaneUrl: node.dataPlaneUrl,
        startedAt: sql`now()`,
        heartbeatAt: sql`now()`,
        stoppedAt: null,
      },
    });
}
