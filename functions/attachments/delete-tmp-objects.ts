import { DeleteObjectsCommand, type S3Client } from "@aws-sdk/client-s3";

/** S3 DeleteObjects takes at most this many keys per call. */
export const MAX_KEYS_PER_DELETE = 1000;

/**
 * Deletes tmp objects; returns the keys S3 confirmed gone (a key that never existed counts
 * as gone: S3 deletes are idempotent). A key S3 reports as failed is left out, so its row
 * can stay and be retried. Throws when S3 cannot be reached.
 */
export async function deleteTmpObjects(
  s3: S3Client,
  bucket: string,
  keys: readonly string[],
  signal: AbortSignal,
): Promise<Set<string>> {
  const gone = new Set<string>();
  for (let start = 0; start < keys.length; start += MAX_KEYS_PER_DELETE) {
    const batch = keys.slice(start, start + MAX_KEYS_PER_DELETE);
    const out = await s3.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
      }),
      { abortSignal: signal },
    );
    const failed = new Set((out.Errors ?? []).map((error) => error.Key));
    for (const key of batch) if (!failed.has(key)) gone.add(key);
  }
  return gone;
}
