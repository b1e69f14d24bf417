import type { Run } from "../../shared/contracts/run.ts";
import type { AgentRun } from "../../shared/db/schema.ts";
import { isoTime, optionalIsoTime } from "../db/iso-time.ts";

export function runBody(row: AgentRun): Run {
  const body: Run = {
    run_id: row.runId,
    thread_id: row.threadId,
    parent_run_id: row.parentRunId,
    runtime_scope_id: row.runtimeScopeId,
    status: row.status,
    cancel_requested: row.cancelRequested,
    created_at: isoTime(row.createdAt),
  };
  if (row.error !== null) body.error = { code: row.error.code, message: row.error.message };
  const startedAt = optionalIsoTime(row.startedAt);
  if (startedAt !== undefined) body.started_at = startedAt;
  const finishedAt = optionalIsoTime(row.finishedAt);
  if (finishedAt !== undefined) body.finished_at = finishedAt;
  return body;
}
