import {
  DeleteObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";

/** Uploaded skill archives live under this prefix of the bucket, one object per upload id. */
export const SKILL_UPLOAD_PREFIX = "skill-uploads/";
/** How long a presigned upload URL works. */
export const SKILL_UPLOAD_URL_TTL_SECONDS = 15 * 60;
/** The only content type the presigned PUT accepts. */
export const SKILL_ARCHIVE_CONTENT_TYPE = "application/octet-stream";

export interface PresignedSkillUpload {
  readonly uploadId: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly expiresAt: Date;
}

/**
 * Where admins put skill archives before an import: the browser or CLI PUTs the archive
 * straight to S3 (never through a Lambda), and the agent-host fetches it by key. The key
 * is made here from a fresh UUID, never from a client-supplied name.
 */
export interface SkillArchiveUploads {
  presign(signal: AbortSignal): Promise<PresignedSkillUpload>;
  keyOf(uploadId: string): string;
  /** The uploaded object's size, or undefined when nothing was uploaded. */
  sizeOf(uploadId: string, signal: AbortSignal): Promise<number | undefined>;
  remove(uploadId: string, signal: AbortSignal): Promise<void>;
}

export function createS3SkillArchiveUploads(p: {
  s3: S3Client;
  /** Signs the upload URL (the local Workcell's same-origin proxy); default `s3`. */
  presignS3?: S3Client;
  bucket: string;
  ttlSeconds?: number;
  now?: () => Date;
}): SkillArchiveUploads {
  const ttl = p.ttlSeconds ?? SKILL_UPLOAD_URL_TTL_SECONDS;
  const keyOf = (uploadId: string) => SKILL_UPLOAD_PREFIX + uploadId;
  return {
    keyOf,
    async presign(signal) {
      signal.throwIfAborted();
      const uploadId = crypto.randomUUID();
      const now = p.now?.() ?? new Date();
      const url = await presignSkillArchivePut(p.presignS3 ?? p.s3, {
        bucket: p.bucket,
        key: keyOf(uploadId),
        expiresInSeconds: ttl,
        signedAt: now,
      });
      return {
        uploadId,
        url,
        headers: { "Content-Type": SKILL_ARCHIVE_CONTENT_TYPE },
        expiresAt: new Date(now.getTime() + ttl * 1000),
      };
    },
    async sizeOf(uploadId, signal) {
      try {
        const head = await p.s3.send(
          new HeadObjectCommand({ Bucket: p.bucket, Key: keyOf(uploadId) }),
          {
            abortSignal: signal,
          },
        );
        return head.ContentLength ?? 0;
      } catch (err) {
        const name = (err as { name?: unknown }).name;
        if (name === "NotFound" || name === "NoSuchKey") return undefined;
        throw err;
      }
    },
    async remove(uploadId, signal) {
      await p.s3.send(new DeleteObjectCommand({ Bucket: p.bucket, Key: keyOf(uploadId) }), {
        abortSignal: signal,
      });
    },
  };
}

/**
 * The presigned PUT of one skill archive (its size is checked after the upload, so the
 * signature covers the key, method, content type and expiry, not the length). Exported for
 * the local Workcell's upload path, which re-derives it to verify what a URL grants.
 */
export function presignSkillArchivePut(
  s3: S3Client,
  p: { bucket: string; key: string; expiresInSeconds: number; signedAt: Date },
): Promise<string> {
  return getSignedUrl(
    s3,
    new PutObjectCommand({
      Bucket: p.bucket,
      Key: p.key,
      ContentType: SKILL_ARCHIVE_CONTENT_TYPE,
    }),
    { expiresIn: p.expiresInSeconds, signingDate: p.signedAt },
  );
}
