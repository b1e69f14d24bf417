import { sql } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";

/** DATA_PLANE_ROUTING=nodes (decision 0114's neighbour, issue 38 (5)): how to pick a node. */
export interface DataPlaneRouting {
  /** A node whose heartbeat is older than this (NODE_TTL_SECONDS) is lost: never named. */
  readonly nodeTtlMs: number;
}

/**
 * The data plane a client is sent to for one thread's files: with several agent-hosts,
 * DATA_PLANE_URL names one node, and files of every thread break when it is lost. Every
 * node serves every UserWorkspace (the data root is shared storage), so the pick is the
 * live, active node that holds the thread's sandbox (its own writes are nearest there),
 * else the live, active node with the freshest heartbeat; `fallback` (DATA_PLANE_URL)
 * only when no node is live. A lost or quiesced node is never named.
 */
export async function pickDataPlaneUrl(
  db: DbOrTransaction,
  scope: { readonly uid: string; readonly runtimeScopeId: string },
  routing: DataPlaneRouting,
  fallback: string,
): Promise<string> {
  const [row] = await executeRows<{ url: string }>(
    db,
    sql`select n.data_plane_url as url from nodes n
        where n.state = 'active' and n.stopped_at is null
          and n.heartbeat_at >= now() - ${routing.nodeTtlMs}::bigint * interval '1 millisecond'
        order by exists (
            select 1 from sandboxes s
            where s.uid = ${scope.uid} and s.runtime_scope_id = ${scope.runtimeScopeId}::uuid
              and s.state = 'running' and s.node_id = n.node_id) desc,
          n.heartbeat_at desc, n.node_id
        limit 1`,
  );
  return row?.url ?? fallback;
}
