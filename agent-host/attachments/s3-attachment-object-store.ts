import { GetObjectCommand, HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { WorkcellError } from "../../shared/errors/index.ts";
import type { AttachmentObjectStore } from "./attachment-object-store.ts";

export interface S3AttachmentObjectStoreOptions {
  readonly s3: S3Client;
  /** ATTACHMENTS_BUCKET: where functions/ presigns the uploads. */
  readonly bucket: string;
}

/** HTTP statuses S3 answers for "no such key" and "If-Match failed". */
const NOT_FOUND_STATUS = 404;
const PRECONDITION_FAILED_STATUS = 412;

/**
 * The attachments bucket over the real S3 API. Bodies are streamed as the SDK hands them
 * (a Node Readable of the HTTP response), never buffered, so importing a large object
 * costs a few socket buffers of memory whatever its size.
 */
export function createS3AttachmentObjectStore(
  options: S3AttachmentObjectStoreOptions,
): AttachmentObjectStore {
  const { s3, bucket } = options;
  return {
    async head(key, signal) {
      try {
        const out = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }), {
          abortSignal: signal,
        });
        return { size: out.ContentLength ?? 0, etag: out.ETag };
      } catch (error) {
        if (statusOf(error) === NOT_FOUND_STATUS) return undefined;
        throw unreachable(error, signal);
      }
    },

    async open(key, etag, signal) {
      let body: unknown;
      try {
        const out = await s3.send(
          new GetObjectCommand({
            Bucket: bucket,
            Key: key,
            ...(etag === undefined ? {} : { IfMatch: etag }),
          }),
          { abortSignal: signal },
        );
        body = out.Body;
      } catch (error) {
        const status = statusOf(error);
        if (status === NOT_FOUND_STATUS) return "missing";
        if (status === PRECONDITION_FAILED_STATUS) return "changed";
        throw unreachable(error, signal);
      }
      if (body === undefined || body === null) return "missing";
      return chunksOf(body as AsyncIterable<Uint8Array> & { destroy?: () => void }, signal);
    },
  };
}

/** Yields the body's chunks and always releases the connection, even on an early exit. */
async function* chunksOf(
  body: AsyncIterable<Uint8Array> & { destroy?: () => void },
  signal: AbortSignal,
): AsyncGenerator<Uint8Array> {
  try {
    // Errors of the body itself only (a reset connection), not of our consumer.
    const iterator = body[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await iterator.next();
      } catch (error) {
        throw unreachable(error, signal);
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    body.destroy?.();
  }
}

/**
 * A failure to reach the bucket is the store's, not the user's: 503, retryable. A plain
 * WorkcellError also keeps a socket error's `code` (ECONNRESET) from being read as a
 * filesystem errno by the write layer. An abort stays the abort.
 */
function unreachable(error: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason;
  return new WorkcellError(
    "unavailable",
    "The attachments bucket cannot be reached: retry the confirm later.",
    { cause: error },
  );
}

function statusOf(error: unknown): number | undefined {
  const metadata = (error as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata;
  return typeof metadata?.httpStatusCode === "number" ? metadata.httpStatusCode : undefined;
}
