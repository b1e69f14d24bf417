import { and, desc, eq } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { type AgentRun, agentRuns } from "../../shared/db/schema.ts";

/** The newest `limit + 1` runs of a thread of this uid, oldest first, and whether more exist. */
export async function listThreadRuns(
  db: DbOrTransaction,
  uid: string,
  threadId: string,
  limit: number,
): Promise<{ rows: AgentRun[]; truncated: boolean }> {
  const rows = await db
    .select()
    .from(agentRuns)
    .where(and(eq(agentRuns.threadId, threadId), eq(agentRuns.uid, uid)))
    .orderBy(desc(agentRuns.createdAt), desc(agentRuns.runId))
    .limit(limit + 1);
  return { rows: rows.slice(0, limit).reverse(), truncated: rows.length > limit };
}
