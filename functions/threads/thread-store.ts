import { and, desc, eq, sql } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import {
  type Conversation,
  conversations,
  type Project,
  projects,
} from "../../shared/db/schema.ts";
import { threadProjectJoin } from "../../shared/db/thread-project-join.ts";
import type { ThreadRecord } from "./thread-body.ts";
import type { ThreadCursor } from "./thread-cursor.ts";

/**
 * The caller's active thread with its Workdir, or undefined (another uid's thread and a
 * deleted one are indistinguishable from none). `share` locks the row until the
 * transaction ends, so a concurrent delete waits for a run or child being added to it.
 */
export async function findActiveThread(
  db: DbOrTransaction,
  uid: string,
  threadId: string,
  lock?: "share" | "update",
): Promise<ThreadRecord | undefined> {
  const query = selectThread(db, uid, threadId, true);
  const [row] = lock === undefined ? await query : await query.for(lock, { of: conversations });
  return row;
}

/** The caller's thread even if deleted: for replaying an idempotent request as it was. */
export async function findThreadIncludingDeleted(
  db: DbOrTransaction,
  uid: string,
  threadId: string,
): Promise<ThreadRecord | undefined> {
  const [row] = await selectThread(db, uid, threadId, false);
  return row;
}

function selectThread(db: DbOrTransaction, uid: string, threadId: string, activeOnly: boolean) {
  return db
    .select({ thread: conversations, workdirPath: projects.workdirPath })
    .from(conversations)
    .innerJoin(projects, threadProjectJoin())
    .where(
      and(
        eq(conversations.threadId, threadId),
        eq(conversations.uid, uid),
        activeOnly ? eq(conversations.status, "active") : undefined,
      ),
    );
}

export async function insertThread(
  db: DbOrTransaction,
  input: { uid: string; project: Project; parent?: Conversation; title?: string | undefined },
): Promise<ThreadRecord> {
  // The id is made here, not by the database, because a root thread is its own root.
  const threadId = crypto.randomUUID();
  const [row] = await db
    .insert(conversations)
    .values({
      threadId,
      uid: input.uid,
      projectId: input.project.id,
      parentThreadId: input.parent?.threadId ?? null,
      rootThreadId: input.parent?.rootThreadId ?? threadId,
      title: input.title ?? null,
    })
    .returning();
  if (row === undefined) throw new Error("insert into conversations returned no row");
  return { thread: row, workdirPath: input.project.workdirPath };
}

export type ThreadPage = {
  readonly items: ThreadRecord[];
  readonly next: ThreadCursor | undefined;
};

/** One page of the caller's active threads, newest first (keyset on created_at, thread_id). */
export async function listThreads(
  db: DbOrTransaction,
  uid: string,
  after: ThreadCursor | undefined,
  limit: number,
): Promise<ThreadPage> {
  const rows = await db
    .select({
      thread: conversations,
      workdirPath: projects.workdirPath,
      // The thread's runs waiting for a person (the console's badge), by the partial index.
      awaiting: sql<number>`(select count(*)::int from agent_runs a where a.thread_id = ${conversations.threadId} and a.status = 'awaiting_approval')`,
      cursorAt: sql<string>`to_char(${conversations.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`,
    })
    .from(conversations)
    .innerJoin(projects, threadProjectJoin())
    .where(
      and(
        eq(conversations.uid, uid),
        eq(conversations.status, "active"),
        after === undefined
          ? undefined
          : sql`(${conversations.createdAt}, ${conversations.threadId}) < (${after.createdAt}::timestamptz, ${after.threadId}::uuid)`,
      ),
    )
    .orderBy(desc(conversations.createdAt), desc(conversations.threadId))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  const next =
    rows.length > limit && last !== undefined
      ? { createdAt: last.cursorAt, threadId: last.thread.threadId }
      : undefined;
  return {
    items: page.map(({ thread, workdirPath, awaiting }) => ({
      thread,
      workdirPath,
      awaitingApproval: Number(awaiting),
    })),
    next,
  };
}
