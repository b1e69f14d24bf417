import type { S3Client } from "@aws-sdk/client-s3";
import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import type { AttachmentLimits } from "./attachment-limits.ts";
import { deleteTmpObjects } from "./delete-tmp-objects.ts";
import { deleteTmpUploads, findExpiredUploads } from "./tmp-upload-store.ts";

export type ExpireTmpUploadsDeps = {
  db: Db;
  s3: S3Client;
  bucket: string;
  logger: Logger;
  limits: Pick<AttachmentLimits, "tmpRetentionMs" | "maxExpiredPerRequest">;
};

/**
 * Deletes `uid`'s unconfirmed tmp uploads older than the retention (objects first, then
 * their rows), at most maxExpiredPerRequest per call; the rest go with the next call.
 * Best effort: S3 trouble is logged and the rows stay for a later attempt, so an uploads
 * request never fails because of old litter (the bucket's lifecycle rule is the backstop).
 * Only this uid's rows are read, so only this uid's objects can be deleted.
 */
export async function expireTmpUploads(
  deps: ExpireTmpUploadsDeps,
  uid: string,
  signal: AbortSignal,
): Promise<number> {
  const expired = await findExpiredUploads(
    deps.db,
    uid,
    deps.limits.tmpRetentionMs,
    deps.limits.maxExpiredPerRequest,
  );
  if (expired.length === 0) return 0;
  let gone: Set<string>;
  try {
    gone = await deleteTmpObjects(
      deps.s3,
      deps.bucket,
      expired.map((row) => row.objectKey),
      signal,
    );
  } catch (error) {
    signal.throwIfAborted();
    deps.logger.warn({ err: error, count: expired.length }, "could not delete expired tmp uploads");
    return 0;
  }
  const fileIds = expired.filter((row) => gone.has(row.objectKey)).map((row) => row.fileId);
  return deleteTmpUploads(deps.db, uid, fileIds);
}
