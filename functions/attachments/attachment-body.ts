import type { Attachment } from "../../shared/contracts/attachment.ts";
import type { Attachment as AttachmentRow } from "../../shared/db/schema.ts";
import { isoTime } from "../db/iso-time.ts";

/** A row as docs/api.md's `attachment`: exactly its fields, Workdir-relative paths. */
export function attachmentBody(row: AttachmentRow): Attachment {
  return {
    file_id: row.fileId,
    file_name: row.fileName,
    content_type: row.contentType,
    size: row.size,
    status: row.status,
    path: row.path,
    original_path: row.originalPath,
    uploaded_at: isoTime(row.uploadedAt),
    ...(row.requestId === null ? {} : { request_id: row.requestId }),
  };
}
