import type { S3Client } from "@aws-sdk/client-s3";
import type { CapabilityMinter } from "../capability/capability-minter.ts";
import type { AttachmentDeps } from "./attachment-deps.ts";
import { type AttachmentLimits, DEFAULT_ATTACHMENT_LIMITS } from "./attachment-limits.ts";
import { createHttpAttachmentImporter } from "./http-attachment-importer.ts";

export type AttachmentDepsOptions = {
  s3: S3Client;
  /** See AttachmentDeps.presignS3. */
  presignS3?: S3Client;
  /** ATTACHMENTS_BUCKET. */
  bucket: string;
  /** DATA_PLANE_URL. */
  dataPlaneUrl: string;
  capabilities: CapabilityMinter;
  limits?: Partial<AttachmentLimits>;
};

/** AppDeps.attachments for an entry: the bucket, and the data plane over HTTP. */
export function createAttachmentDeps(o: AttachmentDepsOptions): AttachmentDeps {
  const limits = { ...DEFAULT_ATTACHMENT_LIMITS, ...o.limits };
  return {
    s3: o.s3,
    ...(o.presignS3 === undefined ? {} : { presignS3: o.presignS3 }),
    bucket: o.bucket,
    importer: createHttpAttachmentImporter({
      baseUrl: o.dataPlaneUrl,
      capabilities: o.capabilities,
      importTimeoutMs: limits.importTimeoutMs,
      removeTimeoutMs: limits.removeTimeoutMs,
      importCapabilityTtlSeconds: limits.importCapabilityTtlSeconds,
    }),
    ...(o.limits === undefined ? {} : { limits: o.limits }),
  };
}
