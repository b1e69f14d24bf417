import { z } from "@hono/zod-openapi";
import { listOf, timestampSchema } from "./common.ts";

/** Entry kinds a listing shows: symlinks and special files are never listed. */
export const DATA_PLANE_ENTRY_TYPES = ["file", "dir"] as const;

/** One entry of `GET /dp/v1/files?path=/dir`. */
export const dataPlaneFileEntrySchema = z
  .object({
    name: z.string().describe("Entry name, without its directory."),
    type: z.enum(DATA_PLANE_ENTRY_TYPES).describe("A regular file or a real directory."),
    size: z.number().int().nonnegative().describe("Size in bytes (0 for directories)."),
    mtime: timestampSchema.describe("Last modification time."),
  })
  .openapi("DataPlaneFileEntry")
  .describe("A Workdir entry.");

export const dataPlaneFileListSchema = listOf(dataPlaneFileEntrySchema).describe(
  "Entries of one Workdir directory.",
);

export type DataPlaneFileEntry = z.infer<typeof dataPlaneFileEntrySchema>;
