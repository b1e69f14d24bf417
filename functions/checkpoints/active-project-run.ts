import { and, eq, inArray } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { agentRuns, conversations } from "../../shared/db/schema.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";

/**
 * Refuses (409 run_active) while a run of any thread of the project is pending or running:
 * those threads share the Workdir, and a checkpoint or restore taken from the API holds no
 * Execution Lease of its own, so no run may write meanwhile (docs/decisions/0154).
 */
export async function refuseWhileProjectRuns(
  db: DbOrTransaction,
  uid: string,
  projectId: string,
): Promise<void> {
  const [active] = await db
    .select({ runId: agentRuns.runId })
    .from(agentRuns)
    .innerJoin(
      conversations,
      and(eq(conversations.threadId, agentRuns.threadId), eq(conversations.uid, agentRuns.uid)),
    )
    .where(
      and(
        eq(agentRuns.uid, uid),
        eq(conversations.projectId, projectId),
        inArray(agentRuns.status, ["pending", "running"]),
      ),
    )
    .limit(1);
  if (active !== undefined) throw domainError("run_active", { details: { run_id: active.runId } });
}
