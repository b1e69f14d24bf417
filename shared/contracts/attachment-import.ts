import { z } from "zod";
import {
  attachmentFileNameProblem,
  MAX_ATTACHMENT_BYTES,
  MAX_CONTENT_TYPE_CHARS,
  MAX_FILES_PER_UPLOAD_GROUP,
} from "./attachment.ts";

/**
 * The data plane's attachment import (docs/architecture.md §7), called by functions/ only, with a
 * capability it mints for itself (op `import`, never handed to a browser). Both sides use
 * these schemas, so the wire cannot drift.
 */
export const ATTACHMENT_IMPORT_PATH = "/internal/v1/attachments/import";

/** Longest S3 key accepted (S3's own limit is 1024 bytes). */
export const MAX_OBJECT_KEY_CHARS = 1024;

/**
 * The S3 key of one temporary upload: `tmp/<uid dirname>/<group id>/<file id>`. The data
 * plane only imports keys of exactly this shape under the capability's own uid, so even a
 * leaked import capability cannot pull another user's upload into this Workdir.
 */
export function tmpUploadObjectKey(uidDir: string, groupId: string, fileId: string): string {
  return `tmp/${uidDir}/${groupId}/${fileId}`;
}

export const attachmentImportItemSchema = z.object({
  file_id: z.uuid().describe("The tmp upload's file id; becomes the attachment id."),
  object_key: z
    .string()
    .min(1)
    .max(MAX_OBJECT_KEY_CHARS)
    .describe("S3 key in the attachments bucket, tmp/<uid dirname>/<group>/<file id>."),
  name: z
    .string()
    .superRefine((name, ctx) => {
      const problem = attachmentFileNameProblem(name);
      if (problem !== undefined) ctx.addIssue({ code: "custom", message: `name ${problem}` });
    })
    .describe("Wanted file name in uploads/ (already sanitized); a taken name gets a suffix."),
  size: z
    .number()
    .int()
    .nonnegative()
    .max(MAX_ATTACHMENT_BYTES)
    .describe("The size announced at upload; the object must have exactly this size."),
  content_type: z.string().min(1).max(MAX_CONTENT_TYPE_CHARS).describe("Announced MIME type."),
  parse: z.boolean().describe("Also extract text to uploads/attachments/<name>.md."),
});

export const attachmentImportRequestSchema = z.object({
  workdir_path: z.string().describe("The Workdir the capability names (consistency check)."),
  items: z
    .array(attachmentImportItemSchema)
    .min(1)
    .max(MAX_FILES_PER_UPLOAD_GROUP)
    .describe("Imported in this order, all or nothing."),
});

export const importedAttachmentSchema = z.object({
  file_id: z.uuid(),
  file_name: z.string().describe("The name the file got in uploads/ (maybe with a suffix)."),
  original_path: z.string().describe("Workdir-relative path of the bytes, uploads/<name>."),
  path: z
    .string()
    .describe("uploads/attachments/<name>.md when parsed, else the same as original_path."),
  size: z.number().int().nonnegative(),
  status: z.enum(["uploaded", "parsed"]),
  truncated: z.boolean().describe("The extraction stopped at its output bound."),
});

export const attachmentImportResponseSchema = z.object({
  items: z.array(importedAttachmentSchema).describe("One per requested item, in order."),
});

export type AttachmentImportItem = z.infer<typeof attachmentImportItemSchema>;
export type AttachmentImportRequest = z.infer<typeof attachmentImportRequestSchema>;
export type ImportedAttachment = z.infer<typeof importedAttachmentSchema>;
export type AttachmentImportResponse = z.infer<typeof attachmentImportResponseSchema>;
