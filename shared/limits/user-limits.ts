import { z } from "@hono/zod-openapi";
import { DEFAULT_MAX_CHECKPOINTS_PER_THREAD } from "../db/schema/checkpoints.ts";

/**
 * Per-uid limits (docs/architecture.md §9, docs/api.md "Limits and usage"). A field an admin has not
 * set takes the deployment's default; these are the defaults of a deployment that set none.
 */
export const DEFAULT_USER_LIMITS: UserLimits = Object.freeze({
  workspace_bytes: 10 * 1024 ** 3,
  workspace_inodes: 1_000_000,
  max_concurrent_runs: 4,
  requests_per_minute: 600,
  egress_bytes_per_run: 1024 ** 3,
  max_checkpoints_per_thread: DEFAULT_MAX_CHECKPOINTS_PER_THREAD,
});

/** Upper bounds an admin can set (sanity: a typo must not become "unlimited"). */
const MAX_WORKSPACE_BYTES = 2 ** 50;
const MAX_WORKSPACE_INODES = 2 ** 40;

export const userLimitsOverrideSchema = z
  .object({
    workspace_bytes: z
      .number()
      .int()
      .min(0)
      .max(MAX_WORKSPACE_BYTES)
      .optional()
      .describe("Bytes of regular files the UserWorkspace may hold."),
    workspace_inodes: z
      .number()
      .int()
      .min(0)
      .max(MAX_WORKSPACE_INODES)
      .optional()
      .describe("Files, directories and links the UserWorkspace may hold."),
    max_concurrent_runs: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .optional()
      .describe("Runs of this user executing at once, across all nodes; more wait."),
    requests_per_minute: z
      .number()
      .int()
      .min(1)
      .max(1_000_000)
      .optional()
      .describe("API requests per minute (token bucket); more get 429 with Retry-After."),
    egress_bytes_per_run: z
      .number()
      .int()
      .min(0)
      .max(MAX_WORKSPACE_BYTES)
      .optional()
      .describe(
        "Bytes one run may move through the egress proxy, both ways together; past it its connections are cut.",
      ),
    max_checkpoints_per_thread: z
      .number()
      .int()
      .min(1)
      .max(1000)
      .optional()
      .describe(
        "Checkpoints a thread keeps; the oldest beyond it are deleted (docs/decisions/0153).",
      ),
  })
  .strict()
  .openapi("UserLimitsOverride")
  .describe("An admin's overrides; a field left out takes the deployment's default.");

export type UserLimitsOverride = z.output<typeof userLimitsOverrideSchema>;

/** Every limit, as in force for a user (GET /v1/usage, the admin limits routes). */
export const userLimitsSchema = userLimitsOverrideSchema
  .required()
  .openapi("UserLimits")
  .describe("The limits in force: each override, else the deployment's default.");
export type UserLimits = Required<UserLimitsOverride>;

/** The limits in force: each override, else the default. */
export function effectiveLimits(override: UserLimitsOverride, defaults: UserLimits): UserLimits {
  return {
    workspace_bytes: override.workspace_bytes ?? defaults.workspace_bytes,
    workspace_inodes: override.workspace_inodes ?? defaults.workspace_inodes,
    max_concurrent_runs: override.max_concurrent_runs ?? defaults.max_concurrent_runs,
    requests_per_minute: override.requests_per_minute ?? defaults.requests_per_minute,
    egress_bytes_per_run: override.egress_bytes_per_run ?? defaults.egress_bytes_per_run,
    max_checkpoints_per_thread:
      override.max_checkpoints_per_thread ?? defaults.max_checkpoints_per_thread,
  };
}
