import type { CheckpointRow } from "../db/schema/checkpoints.ts";
import type { CheckpointView } from "./checkpoint.ts";

/** A checkpoint row as the API shows it (never its node or Workdir path). */
export function checkpointView(row: CheckpointRow): CheckpointView {
  return {
    checkpoint_id: row.checkpointId,
    thread_id: row.threadId,
    ...(row.runId === null ? {} : { run_id: row.runId }),
    ...(row.label === null ? {} : { label: row.label }),
    source: row.source,
    files: row.files,
    bytes: row.bytes,
    skipped: row.skipped,
    mode: row.mode,
    created_at: new Date(row.createdAt).toISOString(),
  };
}
