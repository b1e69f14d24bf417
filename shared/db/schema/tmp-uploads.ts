import { sql } from "drizzle-orm";
import { bigint, check, index, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { createdAt } from "./columns.ts";

// One presigned PUT handed to the browser (POST /v1/attachments/uploads). The row is what
// a later confirm is checked against (same uid, group and declared size), and what the
// 24 h cleanup of the caller's old groups walks.
export const tmpUploads = pgTable(
  "tmp_uploads",
  {
    fileId: uuid("file_id").primaryKey().defaultRandom(),
    uid: text("uid").notNull(),
    groupId: uuid("group_id").notNull(),
    name: text("name").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    contentType: text("content_type").notNull(),
    // S3 key, tmp/<uid dirname>/<group>/...
    objectKey: text("object_key").notNull().unique("tmp_uploads_object_key_key"),
    createdAt: createdAt(),
  },
  (t) => [
    check("tmp_uploads_size_check", sql`${t.size} >= 0`),
    index("tmp_uploads_uid_created_idx").on(t.uid, t.createdAt),
    index("tmp_uploads_uid_group_idx").on(t.uid, t.groupId),
  ],
);

export type TmpUpload = typeof tmpUploads.$inferSelect;
export type NewTmpUpload = typeof tmpUploads.$inferInsert;
