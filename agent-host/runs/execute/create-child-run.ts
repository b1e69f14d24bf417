import { sql } from "drizzle-orm";
import type { Db } from "../../../shared/db/client.ts";
import { type AgentRun, agentRuns, conversations, messages } from "../../../shared/db/schema.ts";
import { fencedRun, type RunFence } from "../claim/run-fence.ts";

/** Characters of the task used as the child thread's title. */
export const CHILD_TITLE_CHARS = 80;

export interface ChildRunSeed {
  readonly parent: Pick<
    AgentRun,
    "runId" | "uid" | "threadId" | "runtimeScopeId" | "originRequestId"
  >;
  readonly parentFence: RunFence;
  readonly projectId: string;
  readonly task: string;
  /** The parent's model override, inherited. */
  readonly model?: string;
  readonly nodeId: string;
  readonly leaseTtlMs: number;
}

export type ChildRun = { readonly run: AgentRun; readonly fence: RunFence };

/**
 * Commits a sub-agent run in one transaction, fenced by the parent's claim: a child
 * thread (inheriting the parent's project and root thread, which the schema's composite
 * foreign keys enforce), its user message (the task) and the child run (the parent's
 * runtime scope and parent_run_id, so the same sandbox and Workdir).
 *
 * The child is born claimed by this node (running, attempt 1, lease): it is executed
 * in-process by its parent's worker, never dispatched through the queue, so there is no
 * window in which it could sit pending with nobody to run it. If this process dies, its
 * lease expires like any other and the sweeper ends it `node_lost`.
 *
 * Undefined when the parent's fence no longer holds (nothing is written then).
 */
export async function createChildRun(db: Db, seed: ChildRunSeed): Promise<ChildRun | undefined> {
  return db.transaction(async (tx) => {
    const [parent] = await tx
      .select({ runId: agentRuns.runId })
      .from(agentRuns)
      .where(fencedRun(seed.parentFence))
      .for("share");
    if (parent === undefined) return undefined;
    const uid = seed.parent.uid;
    const [thread] = await tx
      .insert(conversations)
      .values({
        uid,
        projectId: seed.projectId,
        parentThreadId: seed.parent.threadId,
        rootThreadId: seed.parent.runtimeScopeId,
        title: childTitle(seed.task),
      })
      .returning({ threadId: conversations.threadId });
    if (thread === undefined) throw new Error("insert into conversations returned no row");
    const [run] = await tx
      .insert(agentRuns)
      .values({
        uid,
        threadId: thread.threadId,
        parentRunId: seed.parent.runId,
        runtimeScopeId: seed.parent.runtimeScopeId,
        status: "running",
        attempt: 1,
        ownerNode: seed.nodeId,
        leaseExpiresAt: sql`now() + ${seed.leaseTtlMs}::bigint * interval '1 millisecond'`,
        startedAt: sql`now()`,
        input: seed.task,
        // The tree's submitting request: the sub-agent's log lines name it too.
        originRequestId: seed.parent.originRequestId,
        agent: seed.model === undefined ? {} : { model: seed.model },
      })
      .returning();
    if (run === undefined) throw new Error("insert into agent_runs returned no row");
    await tx
      .insert(messages)
      .values({ uid, threadId: thread.threadId, role: "user", content: seed.task });
    return { run, fence: { runId: run.runId, uid, attempt: run.attempt } };
  });
}

function childTitle(task: string): string {
  const firstLine = task.trim().split("\n", 1)[0] ?? "";
  const short =
    firstLine.length > CHILD_TITLE_CHARS
      ? `${firstLine.slice(0, CHILD_TITLE_CHARS - 1)}…`
      : firstLine;
  return `Sub-agent: ${short === "" ? "task" : short}`;
}
