import type { Logger } from "pino";
import {
  oversizedGroupError,
  oversizedUploadError,
  type UploadsRequest,
  type UploadsResponse,
} from "../../shared/contracts/attachment.ts";
import { tmpUploadObjectKey } from "../../shared/contracts/attachment-import.ts";
import type { Db } from "../../shared/db/client.ts";
import type { NewTmpUpload } from "../../shared/db/schema.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import { uidDirname } from "../../shared/paths/uid-dirname.ts";
import { isoTime } from "../db/iso-time.ts";
import type { AttachmentDeps } from "./attachment-deps.ts";
import type { AttachmentLimits } from "./attachment-limits.ts";
import { contentTypeProblem } from "./content-type-check.ts";
import { expireTmpUploads } from "./expire-tmp-uploads.ts";
import { presignUpload } from "./presign-upload.ts";
import { sanitizeAttachmentName } from "./sanitize-attachment-name.ts";
import { insertTmpUploads } from "./tmp-upload-store.ts";

export type CreateUploadGroupDeps = Pick<AttachmentDeps, "s3" | "presignS3" | "bucket"> & {
  db: Db;
  logger: Logger;
  limits: AttachmentLimits;
};

/**
 * `POST /v1/attachments/uploads`: validates the announced files, sweeps the caller's
 * expired groups, records one tmp upload per file and presigns one PUT per file under
 * `tmp/<uid dirname>/<group>/<file_id>`.
 *
 * Nothing here trusts the client with more than one object key per file for a few
 * minutes: the URL's signature binds key, size and type, and a later confirm checks the
 * object against the size recorded here.
 */
export async function createUploadGroup(
  deps: CreateUploadGroupDeps,
  uid: string,
  request: UploadsRequest,
  signal: AbortSignal,
): Promise<UploadsResponse> {
  const tooLarge =
    oversizedUploadError(request, deps.limits.maxFileBytes) ??
    oversizedGroupError(request, deps.limits.maxGroupBytes);
  if (tooLarge !== undefined) throw tooLarge;
  for (const [index, file] of request.files.entries()) {
    const problem = contentTypeProblem(file.content_type);
    if (problem !== undefined) {
      throw new WorkcellError("invalid_request", `content_type of files[${index}] ${problem}.`, {
        details: { field: `files.${index}.content_type` },
      });
    }
  }

  // Before the new group exists, so it can never be swept by its own request.
  await expireTmpUploads(deps, uid, signal);

  const groupId = crypto.randomUUID();
  const uidDir = uidDirname(uid);
  const rows: NewTmpUpload[] = request.files.map((file) => {
    const fileId = crypto.randomUUID();
    return {
      fileId,
      uid,
      groupId,
      name: sanitizeAttachmentName(file.name),
      size: file.size,
      contentType: file.content_type,
      objectKey: tmpUploadObjectKey(uidDir, groupId, fileId),
    };
  });
  await insertTmpUploads(deps.db, rows);

  // SigV4 dates have whole seconds: sign with a whole-second date so expires_at is exact.
  const signedAt = new Date(Math.floor(Date.now() / 1000) * 1000);
  const expiresAt = new Date(signedAt.getTime() + deps.limits.uploadUrlTtlSeconds * 1000);
  const items = [];
  for (const row of rows) {
    signal.throwIfAborted();
    const presigned = await presignUpload(deps.presignS3 ?? deps.s3, {
      bucket: deps.bucket,
      key: row.objectKey,
      size: row.size,
      contentType: row.contentType,
      expiresInSeconds: deps.limits.uploadUrlTtlSeconds,
      signedAt,
    });
    items.push({
      file_id: row.fileId as string,
      name: row.name,
      upload_url: presigned.url,
      method: "PUT" as const,
      headers: presigned.headers,
      expires_at: isoTime(expiresAt),
    });
  }
  return { group_id: groupId, items };
}
