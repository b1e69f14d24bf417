import { and, asc, eq, isNull } from "drizzle-orm";
import type { PgInsertValue } from "drizzle-orm/pg-core";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { type Attachment, attachments } from "../../shared/db/schema.ts";

/** The thread's attachments, oldest first (the caller checked the thread is theirs). */
export async function listAttachments(
  db: DbOrTransaction,
  uid: string,
  threadId: string,
): Promise<Attachment[]> {
  return db
    .select()
    .from(attachments)
    .where(and(eq(attachments.uid, uid), eq(attachments.threadId, threadId)))
    .orderBy(asc(attachments.uploadedAt), asc(attachments.fileId));
}

/** Rows may compute a column in SQL (uploaded_at from the commit's clock). */
export async function insertAttachments(
  db: DbOrTransaction,
  rows: PgInsertValue<typeof attachments>[],
): Promise<Attachment[]> {
  return db.insert(attachments).values(rows).returning();
}

/**
 * Links the thread's attachments that no request has claimed yet to `requestId`: for the
 * run submission, so `request_id` says which request an attachment was first sent with.
 * Optional: deletes and run contexts work without it.
 */
export async function linkAttachmentsToRequest(
  db: DbOrTransaction,
  uid: string,
  threadId: string,
  requestId: string,
): Promise<number> {
  const linked = await db
    .update(attachments)
    .set({ requestId })
    .where(
      and(
        eq(attachments.uid, uid),
        eq(attachments.threadId, threadId),
        isNull(attachments.requestId),
      ),
    )
    .returning({ fileId: attachments.fileId });
  return linked.length;
}
