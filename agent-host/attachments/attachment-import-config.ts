import type { AttachmentImportLimits } from "./attachment-import-limits.ts";
import type { AttachmentObjectStore } from "./attachment-object-store.ts";
import type { TextExtractor } from "./extraction/text-extractor.ts";

/**
 * What the data plane needs to import attachments (DataPlaneDeps.attachments). Wired once
 * by the agent-host: `{ objects: createS3AttachmentObjectStore({ s3, bucket:
 * env.ATTACHMENTS_BUCKET }) }`.
 */
export interface AttachmentImportConfig {
  /** The attachments bucket functions/ presigns uploads into. */
  readonly objects: AttachmentObjectStore;
  readonly limits?: Partial<AttachmentImportLimits>;
  /** Default: createTextExtractor(limits) (a capped child process per HTML, PDF, DOCX). */
  readonly extractor?: TextExtractor;
}
