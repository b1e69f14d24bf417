import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import type { RunFence } from "../../../agent-host/runs/claim/run-fence.ts";
import type { Db } from "../../../shared/db/client.ts";
import {
  agentRuns,
  conversations,
  messages,
  projects,
  requests,
} from "../../../shared/db/schema.ts";

/**
 * A root run in the state a worker's claim leaves it (running, attempt 1, leased for
 * `leaseTtlMs` by `nodeId`), with the project, thread, message and request it needs.
 */
export async function seedRunningRun(
  db: Db,
  options: { uid: string; workdirPath?: string; leaseTtlMs?: number; nodeId?: string },
): Promise<RunFence & { threadId: string }> {
  const { uid } = options;
  const [project] = await db
    .insert(projects)
    .values({
      uid,
      name: `p-${randomUUID().slice(0, 8)}`,
      workdirPath: options.workdirPath ?? `projects/${randomUUID()}`,
      directoryMode: options.workdirPath === undefined ? "managed" : "linked",
    })
    .returning({ id: projects.id });
  if (project === undefined) throw new Error("no project");
  const threadId = randomUUID();
  await db
    .insert(conversations)
    .values({ threadId, uid, projectId: project.id, rootThreadId: threadId });
  const [message] = await db
    .insert(messages)
    .values({ uid, threadId, role: "user", content: "x" })
    .returning({ id: messages.id });
  if (message === undefined) throw new Error("no message");
  const [request] = await db
    .insert(requests)
    .values({ uid, threadId, messageId: message.id, requestHash: randomUUID() })
    .returning({ id: requests.id });
  if (request === undefined) throw new Error("no request");
  const ttl = options.leaseTtlMs ?? 60_000;
  const [run] = await db
    .insert(agentRuns)
    .values({
      uid,
      threadId,
      requestId: request.id,
      runtimeScopeId: threadId,
      input: "x",
      status: "running",
      attempt: 1,
      ownerNode: options.nodeId ?? "test-node",
      leaseExpiresAt: sql`now() + ${ttl}::bigint * interval '1 millisecond'`,
      startedAt: sql`now()`,
    })
    .returning({ runId: agentRuns.runId });
  if (run === undefined) throw new Error("no run");
  return { runId: run.runId, uid, attempt: 1, threadId };
}
