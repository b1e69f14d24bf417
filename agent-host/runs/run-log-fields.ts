import type { AgentRun } from "../../shared/db/schema.ts";

/**
 * The keys every log line of a run carries: its uid, its id and the X-Request-Id of the API
 * request that submitted it (`request_id`, stored with the run; absent for a run stored
 * before it was, docs/decisions/0059), so an operator finds a request's run lines on
 * whichever node ran them by one id.
 */
export function runLogFields(
  run: Pick<AgentRun, "uid" | "runId" | "originRequestId">,
): Record<string, string> {
  return {
    uid: run.uid,
    run_id: run.runId,
    ...(run.originRequestId === null ? {} : { request_id: run.originRequestId }),
  };
}
