import { z } from "@hono/zod-openapi";
import { userLimitsSchema } from "../limits/user-limits.ts";

/** `GET /v1/usage` (docs/api.md "Limits and usage"; docs/decisions/0049). */
export const usageSchema = z
  .object({
    workspace_bytes: z
      .number()
      .int()
      .nonnegative()
      .describe(
        "Bytes of regular files in the caller's UserWorkspace, as the data plane's quota accounting counts them (at most a few seconds old).",
      ),
    workspace_inodes: z
      .number()
      .int()
      .nonnegative()
      .describe("Files, directories and links in the UserWorkspace, its root included."),
    running_runs: z
      .number()
      .int()
      .nonnegative()
      .describe("The caller's runs executing now (root runs, across all nodes)."),
    queued_runs: z
      .number()
      .int()
      .nonnegative()
      .describe("The caller's runs waiting to start (root runs)."),
    limits: userLimitsSchema,
  })
  .openapi("Usage")
  .describe("The caller's usage against the limits in force.");

export type Usage = z.output<typeof usageSchema>;
