import { and, asc, eq, inArray, lt, sql } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { type NewTmpUpload, type TmpUpload, tmpUploads } from "../../shared/db/schema.ts";

/** Records the presigned PUTs of one group (one statement: all rows or none). */
export async function insertTmpUploads(db: DbOrTransaction, rows: NewTmpUpload[]): Promise<void> {
  await db.insert(tmpUploads).values(rows);
}

/** The caller's tmp uploads of one group; another uid's group reads as empty. */
export async function findGroupUploads(
  db: DbOrTransaction,
  uid: string,
  groupId: string,
): Promise<TmpUpload[]> {
  return db
    .select()
    .from(tmpUploads)
    .where(and(eq(tmpUploads.uid, uid), eq(tmpUploads.groupId, groupId)));
}

/**
 * The caller's tmp uploads older than `olderThanMs` by the database clock (one clock for
 * every runtime), oldest first, at most `limit`. Only this uid's rows: a request never
 * touches another user's uploads.
 */
export async function findExpiredUploads(
  db: DbOrTransaction,
  uid: string,
  olderThanMs: number,
  limit: number,
): Promise<Pick<TmpUpload, "fileId" | "objectKey">[]> {
  return db
    .select({ fileId: tmpUploads.fileId, objectKey: tmpUploads.objectKey })
    .from(tmpUploads)
    .where(
      and(
        eq(tmpUploads.uid, uid),
        lt(tmpUploads.createdAt, sql`now() - make_interval(secs => ${olderThanMs / 1000})`),
      ),
    )
    .orderBy(asc(tmpUploads.createdAt))
    .limit(limit);
}

/** Deletes the caller's tmp upload rows among `fileIds`; returns how many went. */
export async function deleteTmpUploads(
  db: DbOrTransaction,
  uid: string,
  fileIds: readonly string[],
  groupId?: string,
): Promise<number> {
  if (fileIds.length === 0) return 0;
  const deleted = await db
    .delete(tmpUploads)
    .where(
      and(
        eq(tmpUploads.uid, uid),
        inArray(tmpUploads.fileId, [...fileIds]),
        groupId === undefined ? undefined : eq(tmpUploads.groupId, groupId),
      ),
    )
    .returning({ fileId: tmpUploads.fileId });
  return deleted.length;
}
