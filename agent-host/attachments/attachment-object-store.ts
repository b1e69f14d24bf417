/** What HEAD says about one uploaded object. */
export interface StoredObjectInfo {
  readonly size: number;
  /** Entity tag, so the bytes read later are the bytes that were checked. */
  readonly etag: string | undefined;
}

/**
 * The seam to the attachments bucket (S3 in the cloud, fauxqs locally). Expected outcomes
 * are values: a missing object is `undefined`, an object that changed since `head` is
 * `"changed"`; a store that cannot be reached throws.
 */
export interface AttachmentObjectStore {
  head(key: string, signal: AbortSignal): Promise<StoredObjectInfo | undefined>;
  /**
   * The object's bytes as a stream, only if it still has `etag` (when given). The stream
   * must be consumed or returned early (`for await` + break/throw does that): leaving it
   * open would hold a connection.
   */
  open(
    key: string,
    etag: string | undefined,
    signal: AbortSignal,
  ): Promise<AsyncIterable<Uint8Array> | "missing" | "changed">;
}
