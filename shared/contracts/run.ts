import { z } from "@hono/zod-openapi";
import { emptyRequestSchema, listOf, timestampSchema, uuidSchema } from "./common.ts";
import { MAX_THREAD_TITLE_CHARS, threadSchema } from "./thread.ts";

/** Longest user input of one run, in UTF-16 code units (what `string.length` counts). */
export const MAX_RUN_INPUT_CHARS = 200_000;
export const MAX_MODEL_ID_CHARS = 200;
/** Upper bound a client may set on agent loop iterations. */
export const MAX_AGENT_STEPS = 500;

export const RUN_STATUSES = ["pending", "running", "succeeded", "failed", "cancelled"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const TERMINAL_RUN_STATUSES = ["succeeded", "failed", "cancelled"] as const;
export type TerminalRunStatus = (typeof TERMINAL_RUN_STATUSES)[number];

export function isTerminalRunStatus(status: RunStatus): status is TerminalRunStatus {
  return (TERMINAL_RUN_STATUSES as readonly string[]).includes(status);
}

/** The isolation tiers a run may ask for (ARCHITECTURE.md §3). */
export const SANDBOX_TIER_VALUES = ["container", "process"] as const;

export const agentOptionsSchema = z
  .object({
    sandbox: z
      .enum(SANDBOX_TIER_VALUES)
      .optional()
      .describe(
        "Isolation tier of the execution tree: 'container' (Docker) or 'process' (bubblewrap). Default: the node's (container when ready). A tier that is not ready fails the run with sandbox_tier_unavailable, never a silent fallback.",
      ),
    model: z
      .string()
      .min(1)
      .max(MAX_MODEL_ID_CHARS)
      .optional()
      .describe("Model id to use instead of the deployment's default."),
    max_steps: z
      .number()
      .int()
      .min(1)
      .max(MAX_AGENT_STEPS)
      .optional()
      .describe(`Stop the agent loop after this many steps (1 to ${MAX_AGENT_STEPS}).`),
  })
  .strict()
  .describe("Agent options; more fields may be added.");

const runInputSchema = z
  .string()
  .min(1)
  .max(MAX_RUN_INPUT_CHARS)
  .describe("The user's message for this run.");

/** `POST /v1/threads/{thread_id}/runs` */
export const threadRunSubmitRequestSchema = z
  .object({
    input: runInputSchema,
    agent: agentOptionsSchema.optional(),
  })
  .strict()
  .openapi("ThreadRunSubmitRequest")
  .describe("Start a run in an existing thread.");

/** `POST /v1/runs`: creates the thread (and, without project_id, an implicit project) too. */
export const runSubmitRequestSchema = z
  .object({
    input: runInputSchema,
    project_id: uuidSchema
      .optional()
      .describe("Project of the new thread; omit it to get a new implicit managed project."),
    title: z
      .string()
      .trim()
      .min(1)
      .max(MAX_THREAD_TITLE_CHARS)
      .optional()
      .describe("Title of the new thread."),
    agent: agentOptionsSchema.optional(),
  })
  .strict()
  .openapi("RunSubmitRequest")
  .describe("Start a run in a new thread.");

export const runErrorSchema = z
  .object({
    code: z
      .string()
      .describe("Snake_case failure code, e.g. `internal` or `sandbox_identity_mismatch`."),
    message: z.string().describe("What went wrong, for the user."),
  })
  .describe("Why a run failed.");

export const runSchema = z
  .object({
    run_id: uuidSchema.describe("Run id."),
    thread_id: uuidSchema.describe("Thread the run belongs to."),
    parent_run_id: uuidSchema
      .nullable()
      .describe("Run that spawned this sub-agent run, null for a root run."),
    runtime_scope_id: uuidSchema.describe(
      "Execution tree: the root conversation's thread id. Runs sharing it share one sandbox.",
    ),
    status: z.enum(RUN_STATUSES).describe("pending → running → succeeded | failed | cancelled."),
    cancel_requested: z.boolean().describe("True once a cancel was requested."),
    error: runErrorSchema.optional().describe("Present when the run failed."),
    created_at: timestampSchema.describe("Submission time."),
    started_at: timestampSchema.optional().describe("When a worker started it."),
    finished_at: timestampSchema.optional().describe("When it reached a terminal status."),
  })
  .openapi("Run")
  .describe("A run: one agent execution.");

export const runSubmitResponseSchema = z
  .object({ run: runSchema, thread: threadSchema })
  .openapi("RunSubmitResponse")
  .describe("The new run and the thread created for it.");

/** `POST /v1/runs/{run_id}/cancel` takes no fields; it answers 202 with the run. */
export const runCancelRequestSchema = emptyRequestSchema;
export const runCancelResponseSchema = runSchema;

export const FILE_CHANGE_KINDS = ["added", "modified", "deleted"] as const;

export const runChangeSchema = z
  .object({
    path: z.string().describe("Workdir-relative path of the file."),
    change: z.enum(FILE_CHANGE_KINDS).describe("What the run did to it."),
    size: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .describe("Size in bytes after the run; null for a deleted file."),
  })
  .describe("A file the run changed in its Workdir.");

export const runChangeListSchema = listOf(runChangeSchema).describe("Files the run changed.");

export type AgentOptions = z.infer<typeof agentOptionsSchema>;
export type ThreadRunSubmitRequest = z.infer<typeof threadRunSubmitRequestSchema>;
export type RunSubmitRequest = z.infer<typeof runSubmitRequestSchema>;
export type Run = z.infer<typeof runSchema>;
export type RunChange = z.infer<typeof runChangeSchema>;
