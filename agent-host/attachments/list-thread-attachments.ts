import { and, desc, eq } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { attachments } from "../../shared/db/schema.ts";
import type { ContextAttachment } from "./attachment-context.ts";

/** Rows read for one run's context: far more than it lists, a bound on a huge thread. */
export const MAX_CONTEXT_ATTACHMENT_ROWS = 500;

/**
 * The thread's attachments for a starting run's context (withAttachmentContext), oldest
 * first: the newest `limit` of them. Scoped by uid as well as thread (tenant-safe, like
 * every query). Read when the run starts, so it lists what the thread has at that moment.
 */
export async function listThreadAttachments(
  db: DbOrTransaction,
  uid: string,
  threadId: string,
  limit: number = MAX_CONTEXT_ATTACHMENT_ROWS,
): Promise<ContextAttachment[]> {
  const rows = await db
    .select({
      fileName: attachments.fileName,
      path: attachments.path,
      originalPath: attachments.originalPath,
    })
    .from(attachments)
    .where(and(eq(attachments.uid, uid), eq(attachments.threadId, threadId)))
    .orderBy(desc(attachments.uploadedAt), desc(attachments.fileId))
    .limit(limit)
    // Every run reads it: a named statement (decision 0183).
    .prepare("thread_attachments")
    .execute();
  return rows.reverse();
}
