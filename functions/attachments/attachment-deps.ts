import type { S3Client } from "@aws-sdk/client-s3";
import type { AttachmentImporter } from "./attachment-importer.ts";
import type { AttachmentLimits } from "./attachment-limits.ts";

/** What the attachment routes need besides the database (AppDeps.attachments). */
export type AttachmentDeps = {
  /** Client of the attachments bucket: presigned PUTs and tmp object deletes. */
  readonly s3: S3Client;
  /**
   * Presigns the browsers' upload URLs when they must reach the bucket under another
   * endpoint than the server does (the local Workcell's same-origin proxy); default `s3`.
   */
  readonly presignS3?: S3Client;
  /** ATTACHMENTS_BUCKET. */
  readonly bucket: string;
  /** The data plane's import (createHttpAttachmentImporter). */
  readonly importer: AttachmentImporter;
  readonly limits?: Partial<AttachmentLimits>;
};
