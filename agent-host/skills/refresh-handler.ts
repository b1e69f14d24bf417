import { invalidRequestFromZod } from "../../shared/contracts/contract-result.ts";
import { skillsRefreshMessageSchema } from "../../shared/contracts/queue-message.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import type { ProjectionRefresher, RefreshOutcome } from "./projection-refresher.ts";

/**
 * The agent-host side of the skill triggers (issue 7 §4). One function, two callers:
 * - the data plane's internal route, which the control plane calls synchronously when it
 *   revokes (or grants) a skill, before answering the admin (docs/decisions/0007-skills.md);
 * - the queue consumer, for `skills.refresh` messages (fan-out after a skill update, and
 *   the backstop when the synchronous call failed).
 *
 * The message names only the uid: the refresh re-reads the grants itself, so a stale or
 * replayed message can never project more than the grants allow.
 */
export interface SkillsRefreshHandler {
  handle(message: unknown, signal: AbortSignal): Promise<RefreshOutcome>;
}

export function createSkillsRefreshHandler(deps: {
  readonly refresher: ProjectionRefresher;
}): SkillsRefreshHandler {
  return {
    async handle(message, signal) {
      const parsed = skillsRefreshMessageSchema.safeParse(message);
      if (!parsed.success) throw invalidRequestFromZod(parsed.error, "skills refresh message");
      return deps.refresher.refresh(parsed.data.uid, signal);
    },
  };
}

/**
 * For the queue consumer: the error that decides a failed refresh's fate through
 * `queueDisposition` (shared/errors). Lock waits and unreadable grants are retried; a bad
 * skill source is dead-lettered (the projection already went without that slug, and
 * delivering the message again cannot fix the source). Undefined when the refresh is done.
 */
export function refreshFailureError(outcome: RefreshOutcome): WorkcellError | undefined {
  if (outcome.ok) return undefined;
  const retry = outcome.failures.some(
    (f) => f.reason === "busy" || f.reason === "grants_unavailable",
  );
  const details = { reason: "skills_refresh_failed", failures: outcome.failures };
  return retry
    ? new WorkcellError("unavailable", "The skills projection could not be refreshed now: retry.", {
        details,
      })
    : new WorkcellError(
        "unprocessable",
        "Some granted skills could not be projected: re-import them (the projection omits them).",
        { details },
      );
}
