import { z } from "@hono/zod-openapi";
import { CHECKPOINT_SOURCES } from "../db/schema/checkpoints.ts";
import { timestampSchema } from "./common.ts";

/** The most characters of a checkpoint's label. */
export const MAX_CHECKPOINT_LABEL_CHARS = 200;

/** A checkpoint as the API returns it (docs/api.md "Checkpoints"). */
export const checkpointSchema = z
  .object({
    checkpoint_id: z.uuid(),
    thread_id: z.uuid(),
    run_id: z.uuid().optional().describe("The run it was taken before (source `run`)."),
    label: z.string().optional(),
    source: z
      .enum(CHECKPOINT_SOURCES)
      .describe(
        "`manual` (asked for), `run` (before a run), `restore` (the state a restore replaced).",
      ),
    files: z.number().int().nonnegative().describe("Regular files it holds."),
    bytes: z
      .number()
      .int()
      .nonnegative()
      .describe("Their logical size: what counts against the quota."),
    skipped: z
      .number()
      .int()
      .nonnegative()
      .describe("Symlinks and special files of the Workdir that were not kept (never restored)."),
    mode: z.enum(["reflink", "copy"]).describe("How the node copied it."),
    created_at: timestampSchema,
  })
  .openapi("Checkpoint");
export type CheckpointView = z.output<typeof checkpointSchema>;

export const createCheckpointRequestSchema = z
  .object({ label: z.string().min(1).max(MAX_CHECKPOINT_LABEL_CHARS).optional() })
  .strict()
  .openapi("CreateCheckpointRequest");

export const checkpointListSchema = z
  .object({ items: z.array(checkpointSchema) })
  .openapi("CheckpointList");

export const restoreResultSchema = z
  .object({
    restored: checkpointSchema,
    saved: checkpointSchema.describe("The Workdir just before the restore: restore it to undo."),
  })
  .openapi("RestoreResult");

export const forkRequestSchema = z
  .object({
    checkpoint_id: z
      .uuid()
      .optional()
      .describe("Start from this checkpoint; absent: the current Workdir."),
    title: z.string().min(1).max(200).optional(),
  })
  .strict()
  .openapi("ForkRequest");

/**
 * `POST /internal/v1/checkpoints` of the agent-host data plane: functions/'s own call, with
 * a Workdir capability granting `checkpoint` (never granted by files/access).
 */
export const CHECKPOINT_HOST_PATH = "/internal/v1/checkpoints";

export const checkpointHostRequestSchema = z.object({
  workdir_path: z.string().describe("The Workdir the capability names."),
  thread_id: z.uuid(),
  action: z.enum(["take", "restore", "fork"]),
  checkpoint_id: z.uuid().optional(),
  label: z.string().max(MAX_CHECKPOINT_LABEL_CHARS).optional(),
  /** fork: the new managed Workdir (`projects/<uuid>`) to fill. */
  fork_workdir_path: z.string().optional(),
});
export type CheckpointHostRequest = z.output<typeof checkpointHostRequestSchema>;

export const checkpointHostResponseSchema = z.object({
  checkpoint: checkpointSchema.optional(),
  restored: checkpointSchema.optional(),
  saved: checkpointSchema.optional(),
  files: z.number().int().nonnegative().optional(),
});
