import { and, eq } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { type AgentRun, agentRuns } from "../../shared/db/schema.ts";

/** The caller's run, or undefined: another uid's run is indistinguishable from none. */
export async function findRun(
  db: DbOrTransaction,
  uid: string,
  runId: string,
): Promise<AgentRun | undefined> {
  const [row] = await db
    .select()
    .from(agentRuns)
    .where(and(eq(agentRuns.runId, runId), eq(agentRuns.uid, uid)));
  return row;
}
