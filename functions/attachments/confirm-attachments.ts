import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Attachment, AttachmentsConfirmRequest } from "../../shared/contracts/attachment.ts";
import type {
  AttachmentImportItem,
  ImportedAttachment,
} from "../../shared/contracts/attachment-import.ts";
import type { Db } from "../../shared/db/client.ts";
import type { TmpUpload } from "../../shared/db/schema.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { UserLimits } from "../../shared/limits/user-limits.ts";
import type { RequestOrigin } from "../data-plane/request-origin.ts";
import { idempotencyScope } from "../idempotency/idempotency-scope.ts";
import { runIdempotent, storedResponse } from "../idempotency/idempotent-transaction.ts";
import { findEffectiveLimits } from "../limits/user-limits-store.ts";
import { findActiveThread } from "../threads/thread-store.ts";
import { attachmentBody } from "./attachment-body.ts";
import type { AttachmentDeps } from "./attachment-deps.ts";
import type { ImportTarget } from "./attachment-importer.ts";
import type { AttachmentLimits } from "./attachment-limits.ts";
import { insertAttachments } from "./attachment-store.ts";
import { deleteTmpObjects } from "./delete-tmp-objects.ts";
import { deleteTmpUploads, findGroupUploads } from "./tmp-upload-store.ts";

export type ConfirmAttachmentsDeps = Pick<AttachmentDeps, "s3" | "bucket" | "importer"> & {
  db: Db;
  logger: Logger;
  limits: Pick<AttachmentLimits, "removeTimeoutMs">;
  /** The deployment's per-uid limits (the import capability carries the quota). */
  userLimitDefaults: UserLimits;
};

export type ConfirmInput = {
  uid: string;
  threadId: string;
  request: AttachmentsConfirmRequest;
  idempotencyKey: string | undefined;
  /** The confirm request: its id and trace travel to the data plane (decision 0054). */
  origin?: RequestOrigin;
};

type ConfirmResponse = { items: Attachment[] };

/**
 * `POST /v1/threads/{thread_id}/attachments/confirm` (docs/architecture.md §7):
 *
 * 1. Authorization, from Postgres: the thread is the caller's and active, the group is the
 *    caller's and holds every file listed. Anything else is 404 and nothing is imported.
 * 2. The data plane imports the batch into the thread's Workdir with a capability scoped to
 *    it (all or nothing on its side: a refused batch left no file).
 * 3. Only then are the rows committed, with the tmp rows consumed in the same transaction
 *    (so a group is confirmed once: a concurrent confirm of the same files finds them gone
 *    and fails). If the commit fails, the landed files are removed: a row always names
 *    bytes that exist, and no bytes stay without a row.
 * 4. The tmp objects are deleted, best effort (the 24 h sweep and the bucket's lifecycle
 *    rule catch what is left).
 *
 * With an Idempotency-Key the answer of the first success is replayed; a concurrent twin
 * that loses the race removes its own files and answers like the winner.
 */
export async function confirmAttachments(
  deps: ConfirmAttachmentsDeps,
  input: ConfirmInput,
  signal: AbortSignal,
): Promise<ConfirmResponse> {
  const { uid, threadId, request } = input;
  const scope = await idempotencyScope({
    uid,
    key: input.idempotencyKey,
    method: "POST",
    path: `/v1/threads/${threadId}/attachments/confirm`,
    body: request,
  });
  const replayed = await storedResponse(deps.db, scope);
  if (replayed !== undefined) return replayed.body as ConfirmResponse;

  const thread = await findActiveThread(deps.db, uid, threadId);
  if (thread === undefined) throw new WorkcellError("not_found", "No such thread.");
  const uploads = await groupItems(deps.db, uid, request);
  const limits = await findEffectiveLimits(deps.db, uid, deps.userLimitDefaults);
  const target: ImportTarget = {
    uid,
    workdirPath: thread.workdirPath,
    quota: { workspace_bytes: limits.workspace_bytes, workspace_inodes: limits.workspace_inodes },
    ...(input.origin === undefined ? {} : { origin: input.origin }),
  };
  const items: AttachmentImportItem[] = request.items.map((item, index) => {
    const upload = uploads[index] as TmpUpload;
    return {
      file_id: upload.fileId,
      object_key: upload.objectKey,
      name: upload.name,
      size: upload.size,
      content_type: upload.contentType,
      parse: item.parse ?? false,
    };
  });

  const imported = await deps.importer.importFiles(target, items, signal);
  if (!imported.ok) throw imported.error;

  let committedHere = false;
  let response: ConfirmResponse;
  try {
    const stored = await runIdempotent(deps.db, scope, async (tx) => {
      committedHere = true;
      // FOR SHARE: a thread delete (FOR UPDATE) waits for us, or we find it gone (404).
      if ((await findActiveThread(tx, uid, threadId, "share")) === undefined) {
        throw new WorkcellError("not_found", "No such thread.");
      }
      const fileIds = items.map((item) => item.file_id);
      const consumed = await deleteTmpUploads(tx, uid, fileIds, request.group_id);
      if (consumed !== fileIds.length) {
        throw new WorkcellError(
          "conflict",
          "These uploads were confirmed or expired meanwhile: list the thread's attachments, or upload again.",
          { details: { reason: "upload_consumed" } },
        );
      }
      const rows = await insertAttachments(
        tx,
        imported.items.map((file, index) => rowOf(uid, threadId, items[index], file, index)),
      );
      const byId = new Map(rows.map((row) => [row.fileId, row]));
      const bodies = fileIds.map((id) => attachmentBody(byId.get(id) as (typeof rows)[number]));
      return { status: 200, body: { items: bodies } satisfies ConfirmResponse };
    });
    response = stored.body as ConfirmResponse;
  } catch (error) {
    await removeLanded(deps, target, imported.items);
    throw error;
  }
  if (!committedHere) {
    // Another request with our Idempotency-Key committed first: its answer is the answer,
    // and our copy of the files is surplus.
    await removeLanded(deps, target, imported.items);
    return response;
  }

  await deleteTmpObjectsBestEffort(
    deps,
    items.map((item) => item.object_key),
  );
  return response;
}

/**
 * The caller's uploads for the listed files, in request order; 404 when the group is not
 * the caller's (it then looks empty) or a file is not in it. Nothing is imported then.
 */
async function groupItems(
  db: Db,
  uid: string,
  request: AttachmentsConfirmRequest,
): Promise<TmpUpload[]> {
  const group = new Map(
    (await findGroupUploads(db, uid, request.group_id)).map((row) => [row.fileId, row]),
  );
  if (group.size === 0) {
    throw new WorkcellError(
      "not_found",
      "No such upload group: ask POST /v1/attachments/uploads for one (groups expire after 24 h).",
    );
  }
  return request.items.map((item, index) => {
    const upload = group.get(item.file_id);
    if (upload === undefined) {
      throw new WorkcellError("not_found", "A file_id is not in this upload group.", {
        details: { field: `items.${index}.file_id` },
      });
    }
    return upload;
  });
}

function rowOf(
  uid: string,
  threadId: string,
  item: AttachmentImportItem | undefined,
  file: ImportedAttachment,
  index: number,
) {
  return {
    fileId: file.file_id,
    uid,
    threadId,
    fileName: file.file_name,
    contentType: item?.content_type ?? "application/octet-stream",
    size: file.size,
    status: file.status,
    path: file.path,
    originalPath: file.original_path,
    // The commit time, one microsecond apart per item: listings (ordered by uploaded_at)
    // keep the batch's order.
    uploadedAt: sql`now() + ${index} * interval '1 microsecond'`,
  };
}

/** Undoes an import whose rows were not committed. Never bound to the request's signal. */
async function removeLanded(
  deps: ConfirmAttachmentsDeps,
  target: ImportTarget,
  files: readonly ImportedAttachment[],
): Promise<void> {
  const paths = files.flatMap((file) =>
    file.path === file.original_path ? [file.original_path] : [file.path, file.original_path],
  );
  try {
    const failed = await deps.importer.removeFiles(target, paths, new AbortController().signal);
    if (failed.length > 0) {
      deps.logger.error({ paths: failed }, "files of an uncommitted attachment import remain");
    }
  } catch (error) {
    deps.logger.error({ err: error, paths }, "could not remove the files of an uncommitted import");
  }
}

async function deleteTmpObjectsBestEffort(
  deps: ConfirmAttachmentsDeps,
  keys: readonly string[],
): Promise<void> {
  try {
    const signal = AbortSignal.timeout(deps.limits.removeTimeoutMs);
    const gone = await deleteTmpObjects(deps.s3, deps.bucket, keys, signal);
    if (gone.size < keys.length) {
      deps.logger.warn({ count: keys.length - gone.size }, "tmp objects left after a confirm");
    }
  } catch (error) {
    deps.logger.warn({ err: error }, "could not delete the tmp objects of a confirm");
  }
}
