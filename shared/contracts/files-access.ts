import { z } from "@hono/zod-openapi";
import { timestampSchema } from "./common.ts";

/** Operations a data-plane capability can grant on a thread's Workdir. */
export const FILE_ACCESS_OPS = ["read", "write", "delete"] as const;
export type FileAccessOp = (typeof FILE_ACCESS_OPS)[number];

/** `POST /v1/threads/{thread_id}/files/access` */
export const filesAccessRequestSchema = z
  .object({
    ops: z
      .array(z.enum(FILE_ACCESS_OPS))
      .min(1)
      .max(FILE_ACCESS_OPS.length)
      .refine((ops) => new Set(ops).size === ops.length, {
        message: "ops lists an operation twice: list each once",
      })
      .describe("Operations the capability should allow."),
  })
  .strict()
  .openapi("FilesAccessRequest")
  .describe("Ask for a data-plane capability scoped to the thread's Workdir.");

export const filesAccessResponseSchema = z
  .object({
    base_url: z.url().describe("Data-plane base URL; call `<base_url>/dp/v1/...` with the token."),
    token: z.string().min(1).describe("Capability to send as `Authorization: Bearer <token>`."),
    expires_at: timestampSchema.describe("The token stops working at this time."),
  })
  .openapi("FilesAccessResponse")
  .describe("A short-lived capability for the data plane.");

export type FilesAccessRequest = z.infer<typeof filesAccessRequestSchema>;
export type FilesAccessResponse = z.infer<typeof filesAccessResponseSchema>;
