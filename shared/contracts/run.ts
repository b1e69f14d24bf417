import { z } from "@hono/zod-openapi";
import { runNetworkOptionsSchema } from "../network/network-policy.ts";
import { FILE_VIEW_VALUES } from "../paths/file-view.ts";
import { runApprovalOptionsSchema } from "./approval.ts";
import { emptyRequestSchema, timestampSchema, uuidSchema } from "./common.ts";
import { MAX_THREAD_TITLE_CHARS, threadSchema } from "./thread.ts";

/** Longest user input of one run, in UTF-16 code units (what `string.length` counts). */
export const MAX_RUN_INPUT_CHARS = 200_000;
export const MAX_MODEL_ID_CHARS = 200;
/** Upper bound a client may set on agent loop iterations. */
export const MAX_AGENT_STEPS = 500;

export const RUN_STATUSES = [
  "pending",
  "running",
  "awaiting_approval",
  "succeeded",
  "failed",
  "cancelled",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const TERMINAL_RUN_STATUSES = ["succeeded", "failed", "cancelled"] as const;
export type TerminalRunStatus = (typeof TERMINAL_RUN_STATUSES)[number];

export function isTerminalRunStatus(status: RunStatus): status is TerminalRunStatus {
  return (TERMINAL_RUN_STATUSES as readonly string[]).includes(status);
}

/** The isolation tiers a run may ask for (docs/architecture.md §3). */
export const SANDBOX_TIER_VALUES = ["container", "process"] as const;

export const agentOptionsSchema = z
  .object({
    sandbox: z
      .enum(SANDBOX_TIER_VALUES)
      .optional()
      .describe(
        "Isolation tier of the execution tree: 'container' (Docker) or 'process' (bubblewrap). Default: the node's (process when ready, else container: the container tier does not isolate the kernel's per-uid budget). A tier that is not ready fails the run with sandbox_tier_unavailable, never a silent fallback.",
      ),
    file_view: z
      .enum(FILE_VIEW_VALUES)
      .optional()
      .describe(
        "What the run may write: 'workspace' (default: the whole UserWorkspace read-write) or 'workdir' (the UserWorkspace read-only, only the Workdir writable), in the sandbox and in the file tools. Sub-agents share their root run's view.",
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
    network: runNetworkOptionsSchema.optional(),
    approvals: runApprovalOptionsSchema.optional(),
    checkpoint: z
      .boolean()
      .optional()
      .describe(
        "Checkpoint the Workdir before the run's first command (a `checkpoint.created` event names it; restoring it undoes the run). Default: on where the node's checkpoints reflink, off where they copy.",
      ),
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
    status: z
      .enum(RUN_STATUSES)
      .describe("pending → running (⇄ awaiting_approval) → succeeded | failed | cancelled."),
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

/** Most batches listed with a run's changes (the newest are cut, and `truncated` is set). */
export const MAX_LISTED_CHANGE_BATCHES = 1000;

export const runChangeBatchSchema = z
  .object({
    batch_id: uuidSchema.describe("Batch id; pass it as `?batch=` for this command's files."),
    run_id: uuidSchema.describe("The run that executed the command (a sub-agent's, too)."),
    seq: z.number().int().nonnegative().describe("Order of the command in the execution tree."),
    tool: z
      .enum(["bash", "shell", "write_file"])
      .describe("What ran: a bash tool command, a shell-model command, a write_file call."),
    command: z.string().describe("The command (cut to 2000 characters)."),
    started_at: timestampSchema.describe("When the command started (it held its lease)."),
    finished_at: timestampSchema.describe("When it ended."),
    item_count: z.number().int().nonnegative().describe("Files this batch recorded."),
    truncated: z
      .boolean()
      .describe("True when the batch is not this command's whole effect (a bound was hit)."),
    pending_repair: z
      .boolean()
      .describe(
        "True while the batch's commit failed and its facts wait on the agent-host for the repair pass.",
      ),
  })
  .openapi("RunChangeBatch")
  .describe("The files one command changed, committed as one batch under its Execution Lease.");

export const runChangeListSchema = z
  .object({
    items: z
      .array(runChangeSchema)
      .describe(
        "Net effect per file over the listed batches, sorted by path: added-then-deleted files are left out, a deleted file written again is `modified`.",
      ),
    truncated: z
      .boolean()
      .describe(
        "True whenever the list may be incomplete: the run is still going, a batch hit a bound or awaits repair, or a list was cut.",
      ),
    batches: z
      .array(runChangeBatchSchema)
      .describe(
        `The batches the items come from, in order (at most ${MAX_LISTED_CHANGE_BATCHES}).`,
      ),
  })
  .openapi("RunChangeList")
  .describe("Files the run changed: the union of its change batches.");

export const runChangesQuerySchema = z
  .object({
    batch: uuidSchema
      .optional()
      .describe("Only this batch's files (one command); 404 if it is not one of this run's."),
  })
  .strict();

export type AgentOptions = z.infer<typeof agentOptionsSchema>;
export type ThreadRunSubmitRequest = z.infer<typeof threadRunSubmitRequestSchema>;
export type RunSubmitRequest = z.infer<typeof runSubmitRequestSchema>;
export type Run = z.infer<typeof runSchema>;
export type RunChange = z.infer<typeof runChangeSchema>;
export type RunChangeBatch = z.infer<typeof runChangeBatchSchema>;
export type RunChangeList = z.infer<typeof runChangeListSchema>;
