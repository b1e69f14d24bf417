import { sql } from "drizzle-orm";
import { bigint, check, foreignKey, index, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { enumCheck, timestamptz } from "./columns.ts";
import { conversations } from "./conversations.ts";
import { requests } from "./requests.ts";

export const ATTACHMENT_STATUSES = ["uploaded", "parsed"] as const;
export type AttachmentStatus = (typeof ATTACHMENT_STATUSES)[number];

// A file confirmed into the thread's Workdir. Rows are committed only after every file of
// the batch landed (all or nothing), so a row always names bytes that exist.
export const attachments = pgTable(
  "attachments",
  {
    // The tmp upload's file_id, kept so a confirm can be matched to its presigned PUT.
    fileId: uuid("file_id").primaryKey(),
    uid: text("uid").notNull(),
    threadId: uuid("thread_id").notNull(),
    fileName: text("file_name").notNull(),
    contentType: text("content_type").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    status: text("status", { enum: ATTACHMENT_STATUSES }).notNull().default("uploaded"),
    // Workdir-relative paths, e.g. uploads/report.pdf (+ uploads/attachments/report.pdf.md).
    path: text("path").notNull(),
    originalPath: text("original_path").notNull(),
    uploadedAt: timestamptz("uploaded_at").notNull().defaultNow(),
    requestId: uuid("request_id"),
  },
  (t) => [
    foreignKey({
      name: "attachments_thread_fk",
      columns: [t.threadId, t.uid],
      foreignColumns: [conversations.threadId, conversations.uid],
    }),
    foreignKey({
      name: "attachments_request_fk",
      columns: [t.requestId, t.threadId, t.uid],
      foreignColumns: [requests.id, requests.threadId, requests.uid],
    }),
    enumCheck("attachments_status_check", t.status, ATTACHMENT_STATUSES),
    check("attachments_size_check", sql`${t.size} >= 0`),
    index("attachments_thread_idx").on(t.threadId, t.uploadedAt),
  ],
);

export type Attachment = typeof attachments.$inferSelect;
export type NewAttachment = typeof attachments.$inferInsert;
