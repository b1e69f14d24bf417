import {
  MAX_ATTACHMENT_BYTES,
  MAX_UPLOAD_GROUP_BYTES,
  UPLOAD_GROUP_RETENTION_MS,
} from "../../shared/contracts/attachment.ts";

/**
 * Every limit of the attachment routes, with units in the names. Defaults suit production;
 * tests and entries override single values through `AttachmentDeps.limits`.
 */
export type AttachmentLimits = {
  /** One announced file; more answers 413. */
  maxFileBytes: number;
  /** All files of one uploads request together; more answers 413. */
  maxGroupBytes: number;
  /**
   * Lifetime of a presigned PUT. Short: the URL is a bearer credential for one object key,
   * and a browser starts its upload right away. Long enough for a large file on a slow
   * link to *start* (S3 checks the expiry when the request begins, not when it ends).
   */
  uploadUrlTtlSeconds: number;
  /** Unconfirmed groups older than this are deleted by the owner's next uploads request. */
  tmpRetentionMs: number;
  /** Tmp uploads removed per uploads request (one S3 DeleteObjects call takes 1000). */
  maxExpiredPerRequest: number;
  /** The import capability is used at once, by us. */
  importCapabilityTtlSeconds: number;
  /**
   * How long functions/ waits for the data plane to import a batch (20 files of up to
   * maxFileBytes stream S3 → disk). The entry's own request timeout must allow it.
   */
  importTimeoutMs: number;
  /** Removing files after a failed commit or a delete: small requests. */
  removeTimeoutMs: number;
};

export const DEFAULT_ATTACHMENT_LIMITS: AttachmentLimits = {
  maxFileBytes: MAX_ATTACHMENT_BYTES,
  maxGroupBytes: MAX_UPLOAD_GROUP_BYTES,
  uploadUrlTtlSeconds: 15 * 60,
  tmpRetentionMs: UPLOAD_GROUP_RETENTION_MS,
  maxExpiredPerRequest: 1000,
  importCapabilityTtlSeconds: 60,
  importTimeoutMs: 10 * 60_000,
  removeTimeoutMs: 10_000,
};
