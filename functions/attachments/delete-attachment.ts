import { and, eq, inArray, or, sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db, DbTransaction } from "../../shared/db/client.ts";
import { agentRuns, attachments } from "../../shared/db/schema.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { RequestOrigin } from "../data-plane/request-origin.ts";
import { findActiveThread } from "../threads/thread-store.ts";
import type { AttachmentDeps } from "./attachment-deps.ts";

/** Runs in these states may still read an attachment. */
const LIVE_RUN_STATUSES = ["pending", "running"] as const;

export type DeleteAttachmentDeps = Pick<AttachmentDeps, "importer"> & { db: Db; logger: Logger };

/**
 * `DELETE /v1/threads/{thread_id}/attachments/{file_id}`: 409 while a live run of the
 * thread references the attachment; otherwise the row goes first (committed), then the
 * files. In that order, a row never names missing bytes; a failure between the two leaves
 * unlisted files in `uploads/` (logged), never a listed attachment without its file.
 *
 * A run references an attachment when it is pending or running on the same thread and
 * either was submitted with the attachment's request (`request_id`), or starts — for a
 * pending run, was created — after the attachment was uploaded: its model-visible message
 * lists the thread's attachments as of its start (docs/architecture.md §7), so it may be told
 * about this file. A run that started before the upload was never told about it.
 *
 * Race with a run submission: like a thread delete, the thread row is taken FOR UPDATE
 * first (a submitter holds it FOR SHARE until it commits), and the runs are read after,
 * so a run committed just before us is seen, and one after us finds the row gone.
 */
export async function deleteAttachment(
  deps: DeleteAttachmentDeps,
  uid: string,
  threadId: string,
  fileId: string,
  origin?: RequestOrigin,
): Promise<void> {
  const deleted = await deps.db.transaction(async (tx) => {
    const thread = await findActiveThread(tx, uid, threadId, "update");
    if (thread === undefined) throw new WorkcellError("not_found", "No such thread.");
    const [row] = await tx
      .select()
      .from(attachments)
      .where(
        and(
          eq(attachments.fileId, fileId),
          eq(attachments.uid, uid),
          eq(attachments.threadId, threadId),
        ),
      )
      .for("update");
    if (row === undefined) throw new WorkcellError("not_found", "No such attachment.");
    const runId = await referencingRun(tx, uid, fileId);
    if (runId !== undefined) {
      throw new WorkcellError(
        "conflict",
        "A pending or running run of this thread uses the attachment: wait for it to finish or cancel it first.",
        { details: { reason: "attachment_in_use", run_id: runId } },
      );
    }
    await tx
      .delete(attachments)
      .where(and(eq(attachments.fileId, fileId), eq(attachments.uid, uid)));
    return { row, workdirPath: thread.workdirPath };
  });

  const { row } = deleted;
  const paths = row.path === row.originalPath ? [row.originalPath] : [row.path, row.originalPath];
  // Not the request's signal: the row is gone, the files must follow even if the client
  // hung up. The importer bounds the call with its own timeout.
  try {
    const failed = await deps.importer.removeFiles(
      { uid, workdirPath: deleted.workdirPath, ...(origin === undefined ? {} : { origin }) },
      paths,
      new AbortController().signal,
    );
    if (failed.length > 0) {
      deps.logger.warn({ paths: failed, file_id: fileId }, "files of a deleted attachment remain");
    }
  } catch (error) {
    deps.logger.warn(
      { err: error, paths, file_id: fileId },
      "could not remove a deleted attachment's files",
    );
  }
}

/** A live run of the attachment's thread that references it (see deleteAttachment). */
async function referencingRun(
  tx: DbTransaction,
  uid: string,
  fileId: string,
): Promise<string | undefined> {
  const [run] = await tx
    .select({ runId: agentRuns.runId })
    .from(agentRuns)
    .innerJoin(
      attachments,
      and(
        eq(attachments.fileId, fileId),
        eq(attachments.uid, agentRuns.uid),
        eq(attachments.threadId, agentRuns.threadId),
      ),
    )
    .where(
      and(
        eq(agentRuns.uid, uid),
        inArray(agentRuns.status, [...LIVE_RUN_STATUSES]),
        or(
          eq(agentRuns.requestId, attachments.requestId),
          sql`coalesce(${agentRuns.startedAt}, ${agentRuns.createdAt}) >= ${attachments.uploadedAt}`,
        ),
      ),
    )
    .limit(1);
  return run?.runId;
}
