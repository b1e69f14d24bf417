import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { Logger } from "pino";
import { z } from "zod";
import { approvalArguments, approvalHash } from "../../shared/approvals/approval-hash.ts";
import type { Db } from "../../shared/db/client.ts";
import type { DatabaseRetry } from "../../shared/db/database-retry.ts";
import { retryDatabaseWhile } from "../../shared/db/retry-database-while.ts";
import { type AgentRun, type RunApprovalRow, runApprovals } from "../../shared/db/schema.ts";
import type { RunError } from "../runs/agent/agent-event.ts";
import type { RunFence } from "../runs/claim/run-fence.ts";
import { loadApprovalPolicy, toolAsks } from "./approval-policy.ts";
import type { LoopApprovals, LoopPause, ResumeDecision } from "./loop-approvals.ts";

export interface RunApprovals {
  readonly loop: LoopApprovals;
  readonly timeoutSeconds: number;
}

export const APPROVAL_MISMATCH: RunError = Object.freeze({
  code: "approval_mismatch",
  message:
    "The call about to run is not the one that was approved (its arguments changed since): it was not run. Submit the task again.",
});

const ALREADY_RESUMED: RunError = Object.freeze({
  code: "approval_already_used",
  message:
    "This approval was already taken up by an earlier attempt of the run, so the call was not run again: check the Workdir, then submit the task again.",
});

/**
 * The approval side of one root run's execution: the policy (its calls that ask) and, when
 * the run was paused and a person decided since, the decision to resume with. Undefined
 * when nothing of the run asks and nothing is to resume.
 */
export async function openRunApprovals(
  db: Db,
  { run, fence }: { readonly run: AgentRun; readonly fence: RunFence },
  opts: {
    readonly defaultTimeoutSeconds: number;
    readonly denialFails: boolean;
    /** The two reads wait for a database that is away (pure reads; decision 0150). */
    readonly retry?: {
      readonly policy: DatabaseRetry;
      readonly logger: Logger;
      readonly signal: AbortSignal;
    };
  },
): Promise<RunApprovals | undefined> {
  const read = () =>
    Promise.all([
      loadApprovalPolicy(db, run, opts.defaultTimeoutSeconds),
      db
        .select()
        .from(runApprovals)
        .where(eq(runApprovals.runId, run.runId))
        .orderBy(asc(runApprovals.requestedAt)),
    ]);
  const { retry } = opts;
  const [policy, rows] =
    retry === undefined
      ? await read()
      : await retryDatabaseWhile(
          retry.policy,
          "reading the run's approvals",
          retry.logger,
          retry.signal,
          read,
        );
  const approvedForRun = new Set(
    rows.flatMap((r) => (r.status === "approved" && r.scope === "run" && r.tool ? [r.tool] : [])),
  );
  const decided = rows.findLast(
    (r) => r.status !== "pending" && r.resumedAttempt === null && r.resumeState !== null,
  );
  const resume = decided === undefined ? undefined : await resumeOf(db, fence, decided);
  if (policy === undefined && resume === undefined) return undefined;
  return {
    timeoutSeconds: policy?.timeoutSeconds ?? opts.defaultTimeoutSeconds,
    loop: {
      needsApproval: (call) => toolAsks(policy, call.name, approvedForRun),
      denialFails: opts.denialFails,
      ...(resume === undefined ? {} : { resume }),
    },
  };
}

async function resumeOf(
  db: Db,
  fence: RunFence,
  row: RunApprovalRow,
): Promise<LoopApprovals["resume"]> {
  const pause = loopPauseSchema.safeParse(row.resumeState);
  if (!pause.success) throw new Error(`approval ${row.approvalId} has an unreadable resume state`);
  const decision: ResumeDecision =
    row.status === "approved"
      ? { approved: true, claim: () => claimApproval(db, fence, row, pause.data) }
      : await refusalOf(db, fence, row);
  // The messages are the loop's own, stored by recordPause; only their envelope is checked.
  return { pause: pause.data as unknown as LoopPause, decision };
}

/** A denial or expiry is taken up at once: the agent gets the refusal, nothing runs. */
async function refusalOf(db: Db, fence: RunFence, row: RunApprovalRow): Promise<ResumeDecision> {
  await markResumed(db, fence, row.approvalId);
  const who = row.status === "expired" ? "nobody decided in time (expired)" : row.decidedBy;
  const refusal = `Denied by ${who}${row.note ? `: ${row.note}` : ""}. The '${row.tool}' call was not run.`;
  return {
    approved: false,
    refusal,
    error: {
      code: "approval_denied",
      message:
        row.status === "expired"
          ? "The command waited for approval until it expired, so it was not run: submit it again and ask someone to approve it."
          : `The command was denied by ${row.decidedBy}${row.note ? ` (${row.note})` : ""}, so it was not run.`,
    },
  };
}

/**
 * Before the approved call runs: it must be the call the person saw (its hash, over the
 * stored arguments and over the resumed call, equals the approval's), and the approval is
 * marked taken by this claim, once: a second resume of it never runs the call again.
 */
async function claimApproval(
  db: Db,
  fence: RunFence,
  row: RunApprovalRow,
  pause: z.infer<typeof loopPauseSchema>,
): Promise<RunError | undefined> {
  const call = pause.pendingCalls[0];
  const shown = row.tool === null ? undefined : approvalHash(row.tool, row.arguments);
  const resumed =
    call === undefined ? undefined : approvalHash(call.name, approvalArguments(call.arguments));
  if (shown !== row.argumentsHash || resumed !== row.argumentsHash) return APPROVAL_MISMATCH;
  return (await markResumed(db, fence, row.approvalId)) ? undefined : ALREADY_RESUMED;
}

/** Fenced: only the claim that holds the run marks it, and only once. */
async function markResumed(db: Db, fence: RunFence, approvalId: string): Promise<boolean> {
  const rows = await db
    .update(runApprovals)
    .set({ resumedAttempt: fence.attempt })
    .where(
      and(
        eq(runApprovals.approvalId, approvalId),
        isNull(runApprovals.resumedAttempt),
        sql`exists (select 1 from agent_runs where run_id = ${fence.runId} and attempt = ${fence.attempt} and status = 'running')`,
      ),
    )
    .returning({ approvalId: runApprovals.approvalId });
  return rows.length === 1;
}

const toolCallSchema = z.object({ id: z.string(), name: z.string(), arguments: z.string() });
const loopPauseSchema = z.object({
  newMessages: z.array(z.looseObject({ role: z.enum(["system", "user", "assistant", "tool"]) })),
  pendingCalls: z.array(toolCallSchema).min(1),
  turns: z.number().int().nonnegative(),
  usage: z.object({ inputTokens: z.number(), outputTokens: z.number() }),
  lastExitCode: z.number().int().optional(),
});
