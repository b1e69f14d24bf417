import { z } from "@hono/zod-openapi";
import { domainError } from "../errors/domain-errors.ts";
import type { WorkcellError } from "../errors/workcell-error.ts";
import { hasControlCharacter, utf8ByteLength } from "../paths/text-checks.ts";
import { MAX_PATH_COMPONENT_BYTES } from "../paths/workdir-path-limits.ts";
import { listOf, timestampSchema, uuidSchema } from "./common.ts";

/** Largest single attachment; a bigger announced size answers 413. */
export const MAX_ATTACHMENT_BYTES = 512 * 1024 * 1024;
/** Most bytes one upload group may announce, all files together; more answers 413. */
export const MAX_UPLOAD_GROUP_BYTES = 1024 * 1024 * 1024;
/** Most files in one upload group (one uploads request, one confirm). */
export const MAX_FILES_PER_UPLOAD_GROUP = 20;
/**
 * Longest file name an uploads request may send, in UTF-16 code units, before the server
 * turns it into a Workdir name (last path component, control characters replaced, at most
 * MAX_PATH_COMPONENT_BYTES). Generous on purpose: a browser may send a full client path.
 */
export const MAX_UPLOAD_NAME_CHARS = 1024;
export const MAX_CONTENT_TYPE_CHARS = 255;
/** Unconfirmed upload groups older than this are deleted by the next uploads request. */
export const UPLOAD_GROUP_RETENTION_MS = 24 * 60 * 60 * 1000;

export const ATTACHMENT_STATUSES = ["uploaded", "parsed"] as const;

/**
 * Why a file name cannot be a single Workdir entry, or undefined when it can. The data
 * plane re-checks while writing; this early check turns a doomed upload into a 400
 * before the browser sends any bytes.
 */
export function attachmentFileNameProblem(name: string): string | undefined {
  if (name.trim().length === 0) return "must not be empty";
  if (name === "." || name === "..") return "must not be '.' or '..'";
  if (name.includes("/") || name.includes("\\")) return "must not contain '/' or '\\'";
  if (hasControlCharacter(name)) return "must not contain control characters";
  if (!name.isWellFormed()) return "must be well-formed Unicode";
  if (utf8ByteLength(name) > MAX_PATH_COMPONENT_BYTES) {
    return `must not be longer than ${MAX_PATH_COMPONENT_BYTES} bytes`;
  }
  return undefined;
}

export const attachmentFileNameSchema = z
  .string()
  .max(MAX_PATH_COMPONENT_BYTES)
  .superRefine((name, ctx) => {
    const problem = attachmentFileNameProblem(name);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: `file name ${problem}` });
  })
  .describe("File name without any directory part, e.g. `report.pdf`.");

const uploadFileSchema = z
  .object({
    name: z
      .string()
      .max(MAX_UPLOAD_NAME_CHARS)
      .describe(
        "File name as the client has it. The server keeps only its last path component (after `/` or `\\`), replaces control and bidirectional-override characters with `_`, strips leading and trailing dots and spaces, shortens it to fit a file name, and falls back to `attachment` when nothing is left.",
      ),
    size: z
      .number()
      .int()
      .nonnegative()
      .max(Number.MAX_SAFE_INTEGER)
      .describe(`Size in bytes; over ${MAX_ATTACHMENT_BYTES} answers 413.`),
    content_type: z
      .string()
      .min(1)
      .max(MAX_CONTENT_TYPE_CHARS)
      .describe("MIME type, e.g. `application/pdf`."),
  })
  .strict();

/** `POST /v1/attachments/uploads` */
export const uploadsRequestSchema = z
  .object({
    files: z
      .array(uploadFileSchema)
      .min(1)
      .max(MAX_FILES_PER_UPLOAD_GROUP)
      .describe(`Files to upload, 1 to ${MAX_FILES_PER_UPLOAD_GROUP}.`),
  })
  .strict()
  .openapi("UploadsRequest")
  .describe("Ask for presigned upload URLs.");

export type UploadsRequest = z.infer<typeof uploadsRequestSchema>;

/**
 * The 413 for an uploads request announcing a file over `maxBytes`, or undefined.
 * The size is not a schema rule because the API answers it with 413, not 400.
 */
export function oversizedUploadError(
  request: UploadsRequest,
  maxBytes: number = MAX_ATTACHMENT_BYTES,
): WorkcellError | undefined {
  const names = request.files.filter((file) => file.size > maxBytes).map((file) => file.name);
  if (names.length === 0) return undefined;
  return domainError("attachment_too_large", {
    message: `Files larger than ${maxBytes} bytes cannot be attached: ${names.join(", ")}.`,
    details: { names, max_bytes: maxBytes },
  });
}

/** The 413 for an uploads request announcing more than `maxGroupBytes` in total, or undefined. */
export function oversizedGroupError(
  request: UploadsRequest,
  maxGroupBytes: number = MAX_UPLOAD_GROUP_BYTES,
): WorkcellError | undefined {
  const total = request.files.reduce((sum, file) => sum + file.size, 0);
  if (total <= maxGroupBytes) return undefined;
  return domainError("attachment_too_large", {
    message: `The files announce ${total} bytes together; one upload group takes at most ${maxGroupBytes}: upload them in several groups.`,
    details: { total_bytes: total, max_group_bytes: maxGroupBytes },
  });
}

export const uploadsResponseSchema = z
  .object({
    group_id: uuidSchema.describe("Upload group; pass it to confirm."),
    items: z
      .array(
        z.object({
          file_id: uuidSchema.describe("Id of this file within the group."),
          name: z
            .string()
            .describe(
              "The file name the upload will get in `uploads/` (the requested one, sanitized); a name already taken there gets a suffix like ` (1)` at confirm.",
            ),
          upload_url: z.url().describe("Presigned URL to PUT the bytes to."),
          method: z.literal("PUT").describe("HTTP method for upload_url."),
          headers: z
            .record(z.string(), z.string())
            .describe("Headers the PUT must send exactly, e.g. Content-Type."),
          expires_at: timestampSchema.describe("upload_url stops working at this time."),
        }),
      )
      .describe("One presigned upload per requested file, in request order."),
  })
  .openapi("UploadsResponse")
  .describe("Where to upload each file.");

/** `POST /v1/threads/{thread_id}/attachments/confirm` */
export const attachmentsConfirmRequestSchema = z
  .object({
    group_id: uuidSchema.describe("The group from the uploads response."),
    items: z
      .array(
        z
          .object({
            file_id: uuidSchema.describe("A file of the group that was uploaded."),
            parse: z
              .boolean()
              .optional()
              .describe("Also extract text to `uploads/attachments/<name>.md`."),
          })
          .strict(),
      )
      .min(1)
      .max(MAX_FILES_PER_UPLOAD_GROUP)
      .superRefine((items, ctx) => {
        const seen = new Set<string>();
        for (const [index, item] of items.entries()) {
          if (seen.has(item.file_id)) {
            ctx.addIssue({
              code: "custom",
              path: [index, "file_id"],
              message: "file_id is listed twice: list each file once",
            });
          }
          seen.add(item.file_id);
        }
      })
      .describe("Files to import into the thread's Workdir, all or none."),
  })
  .strict()
  .openapi("AttachmentsConfirmRequest")
  .describe("Import uploaded files into the thread's Workdir.");

export const attachmentSchema = z
  .object({
    file_id: uuidSchema.describe("Attachment id."),
    file_name: z.string().describe("Name of the file in the Workdir."),
    content_type: z.string().describe("MIME type."),
    size: z.number().int().nonnegative().describe("Size in bytes."),
    status: z
      .enum(ATTACHMENT_STATUSES)
      .describe("`parsed` when a text extraction exists at `path`."),
    path: z
      .string()
      .describe("Workdir-relative path the agent should read, e.g. `uploads/report.pdf`."),
    original_path: z.string().describe("Workdir-relative path of the uploaded bytes."),
    uploaded_at: timestampSchema.describe("When the import landed."),
    request_id: uuidSchema
      .optional()
      .describe("The run request the attachment was first sent with."),
  })
  .openapi("Attachment")
  .describe("A file attached to a thread.");

export const attachmentListSchema = listOf(attachmentSchema).describe("Attachments.");

export type AttachmentsConfirmRequest = z.infer<typeof attachmentsConfirmRequestSchema>;
export type UploadsResponse = z.infer<typeof uploadsResponseSchema>;
export type Attachment = z.infer<typeof attachmentSchema>;
