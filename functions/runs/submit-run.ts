import { and, eq, type SQL, type SQLWrapper, sql } from "drizzle-orm";
import type { Logger } from "pino";
import { withDeadline } from "../../shared/async/with-deadline.ts";
import type { AgentOptions } from "../../shared/contracts/run.ts";
import type { Db, DbOrTransaction } from "../../shared/db/client.ts";
import {
  executePreparedStatement,
  type PreparedStatement,
  prepareStatement,
} from "../../shared/db/execute-prepared-rows.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";
import { uniqueViolationConstraint } from "../../shared/db/pg-error.ts";
import {
  type AgentRun,
  agentRuns,
  conversations,
  messages,
  requests,
} from "../../shared/db/schema.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import type { TraceContext } from "../../shared/telemetry/tracing.ts";
import { DEFAULT_APP_LIMITS } from "../app-limits.ts";
import { tableRow } from "../db/table-row.ts";
import { requestHash } from "../idempotency/request-hash.ts";
import type { RunQueue } from "../queue/run-queue.ts";
import { createThreadIn } from "../threads/create-thread.ts";
import type { ThreadRecord } from "../threads/thread-body.ts";
import { findThreadIncludingDeleted } from "../threads/thread-store.ts";

/** The unique constraint that makes two submissions with one Idempotency-Key collide. */
const IDEMPOTENCY_CONSTRAINT = "requests_uid_idempotency_key_key";

export type RunTarget =
  | { readonly kind: "thread"; readonly threadId: string }
  | { readonly kind: "new_thread"; readonly projectId?: string; readonly title?: string };

export type SubmitRunInput = {
  readonly uid: string;
  readonly target: RunTarget;
  readonly input: string;
  readonly agent: AgentOptions | undefined;
  readonly idempotencyKey: string | undefined;
  /** The request's trace context; the run's message carries it to the worker. */
  readonly trace?: TraceContext;
  /**
   * The same context as W3C fields (injectTrace), stored with the run so the sweeper's
   * re-send continues the submission's trace (docs/decisions/0054). Empty when tracing is off.
   */
  readonly traceCarrier?: Readonly<Record<string, string>>;
  /**
   * The submitting request's X-Request-Id, stored with the run: the agent-host's log lines
   * of the run carry it (docs/decisions/0059).
   */
  readonly originRequestId?: string;
};

/** `thread` only for a new thread (POST /v1/runs answers with it); a thread run answers with the run. */
export type SubmittedRun = { readonly run: AgentRun; readonly thread: ThreadRecord | undefined };

export type SubmitRunDeps = {
  readonly db: Db;
  readonly runQueue: RunQueue;
  readonly logger: Logger;
  readonly queueSendTimeoutMs: number;
  /** Pending root runs a uid may have; one more is 429 `queued_runs_limit` (default DEFAULT_APP_LIMITS). */
  readonly maxQueuedRuns?: number;
  readonly queuedRunsRetryAfterSeconds?: number;
  readonly metrics: Pick<WorkcellMetrics, "runsSubmitted">;
};

/**
 * Commit, then enqueue (docs/architecture.md §4.7). Message, request and run (pending,
 * attempt 0, runtime scope = the root thread) commit together: one statement for an
 * existing thread, one transaction with the new thread (and implicit project) otherwise.
 * Only after the commit is `{run_id}` sent to SQS. If
 * the send fails the run stays pending with `dispatched_at` cleared, and the dispatch
 * sweeper sends it; if we crash between commit and send, the sweeper sends it once
 * `dispatched_at` is older than its re-dispatch threshold. A committed run is never lost.
 */
export async function submitRun(deps: SubmitRunDeps, p: SubmitRunInput): Promise<SubmittedRun> {
  // Only a request with a key can be replayed, so only then is its body hashed (a
  // request without one stores NULL, requests_hash_check).
  const hash =
    p.idempotencyKey === undefined
      ? null
      : requestHash({ target: p.target, input: p.input, agent: p.agent ?? null });
  if (p.idempotencyKey !== undefined && hash !== null) {
    const earlier = await findByIdempotencyKey(deps.db, p, p.idempotencyKey, hash);
    if (earlier !== undefined) return earlier;
  }

  let submitted: SubmittedRun;
  try {
    submitted =
      p.target.kind === "thread"
        ? await insertRunInThread(deps, p, p.target.threadId, hash)
        : await insertRunInNewThread(deps, p, p.target, hash);
  } catch (error) {
    // Another submission with the same key committed first (we waited on its unique
    // index entry); everything we wrote is rolled back. Answer with its run.
    if (
      p.idempotencyKey !== undefined &&
      hash !== null &&
      uniqueViolationConstraint(error) === IDEMPOTENCY_CONSTRAINT
    ) {
      const earlier = await findByIdempotencyKey(deps.db, p, p.idempotencyKey, hash);
      if (earlier !== undefined) return earlier;
    }
    throw error;
  }

  deps.metrics.runsSubmitted.inc();
  // The request's logger carries request_id and uid: this line ties them to the run.
  deps.logger.info(
    { run_id: submitted.run.runId, thread_id: submitted.run.threadId },
    "run submitted",
  );
  await dispatchAfterCommit(deps, submitted.run.runId, p.trace);
  return submitted;
}

/**
 * The run's rows for an existing thread, in ONE statement: a FOR SHARE lock of the active
 * thread, then message, request and run as data-modifying CTEs. A single statement is its
 * own transaction (all rows or none) and costs one round trip instead of six (BEGIN,
 * lock, three inserts, COMMIT): the submission benchmark is dominated by round trips.
 * Foreign keys between the CTEs are checked at the end of the statement, when all rows
 * exist. No thread row (unknown, another uid's, deleted): nothing is inserted, 404.
 */
async function insertRunInThread(
  deps: SubmitRunDeps,
  p: SubmitRunInput,
  threadId: string,
  hash: string | null,
): Promise<SubmittedRun> {
  const run = await insertMessageRequestRun(deps.db, SUBMIT_IN_THREAD, p, hash, maxQueuedOf(deps), {
    threadId,
  });
  if (run === undefined) {
    // Rare: only now is it worth a second query to tell the two refusals apart.
    await refuseIfQueueFull(deps, deps.db, p.uid);
    throw new WorkcellError("not_found", "No such thread.");
  }
  return { run, thread: undefined };
}

/** A new thread (and maybe an implicit project) first, then the same three rows, in one transaction. */
async function insertRunInNewThread(
  deps: SubmitRunDeps,
  p: SubmitRunInput,
  target: Extract<RunTarget, { kind: "new_thread" }>,
  hash: string | null,
): Promise<SubmittedRun> {
  return deps.db.transaction(async (tx) => {
    const created = await createThreadIn(tx, p.uid, {
      project_id: target.projectId,
      title: target.title,
    });
    const run = await insertMessageRequestRun(
      tx,
      SUBMIT_IN_NEW_THREAD,
      p,
      hash,
      maxQueuedOf(deps),
      {
        threadId: created.thread.threadId,
        rootThreadId: created.thread.rootThreadId,
      },
    );
    if (run === undefined) {
      // Throwing rolls the new thread (and implicit project) back with the refusal.
      await refuseIfQueueFull(deps, tx, p.uid);
      throw new Error("insert of a run into a new thread returned no row");
    }
    return { run, thread: created };
  });
}

/** A named parameter of the submission statement, filled per call. */
const value = (name: string) => sql.placeholder(name);

/**
 * message → request → run for the one thread `threadSelect` yields (`thread_id`,
 * `root_thread_id`); no row when it yields none or the uid already has `max_queued`
 * pending root runs (counted in the same statement, at most `max_queued` index entries
 * read). The runtime scope is the root thread. Rendered once per thread select (its text
 * is fixed): each connection parses and plans it once and runs it in one round trip, and
 * no request renders it again (docs/decisions/0087, 0089).
 */
function submitStatement(name: string, threadSelect: SQL): PreparedStatement {
  return prepareStatement(
    name,
    sql`with candidate as (${threadSelect}),
      thread as (
        select candidate.* from candidate
        where ${queuedRuns(value("uid"), value("max_queued"))} < ${value("max_queued")}::int
      ),
      message as (
        insert into ${messages} (uid, thread_id, role, content)
        select ${value("uid")}, thread.thread_id, 'user', ${value("input")} from thread
        returning id, thread_id, content
      ),
      request as (
        insert into ${requests} (uid, thread_id, message_id, idempotency_key, request_hash)
        select ${value("uid")}, message.thread_id, message.id, ${value("idempotency_key")}::text, ${value("request_hash")}::text from message
        returning id, thread_id
      )
    insert into ${agentRuns} (uid, thread_id, request_id, runtime_scope_id, input, agent, dispatched_at, trace_context, origin_request_id)
    select ${value("uid")}, request.thread_id, request.id, thread.root_thread_id,
      -- The input travels once: the run's copy comes from the message row.
      message.content,
      ${value("agent")}::jsonb,
      -- The database clock, like the sweeper's comparison: app and DB clocks may differ.
      now(),
      ${value("trace_context")}::jsonb,
      ${value("origin_request_id")}::text
    from request cross join thread cross join message
    returning *`,
  );
}

/** An existing thread: a FOR SHARE lock of it, if active and the uid's. Exported for its plan test. */
export const SUBMIT_IN_THREAD = submitStatement(
  "submit_run",
  sql`select thread_id, root_thread_id from ${conversations}
    where thread_id = ${value("thread_id")} and uid = ${value("uid")} and status = 'active' for share`,
);

/** A thread created in the same transaction. */
const SUBMIT_IN_NEW_THREAD = submitStatement(
  "submit_run_new_thread",
  sql`select ${value("thread_id")}::uuid as thread_id, ${value("root_thread_id")}::uuid as root_thread_id`,
);

async function insertMessageRequestRun(
  db: DbOrTransaction,
  statement: PreparedStatement,
  p: SubmitRunInput,
  hash: string | null,
  maxQueued: number,
  thread: { readonly threadId: string; readonly rootThreadId?: string },
): Promise<AgentRun | undefined> {
  const [raw] = await executePreparedStatement<Record<string, unknown>>(db, statement, {
    uid: p.uid,
    thread_id: thread.threadId,
    root_thread_id: thread.rootThreadId,
    max_queued: maxQueued,
    input: p.input,
    idempotency_key: p.idempotencyKey ?? null,
    request_hash: hash,
    agent: JSON.stringify(p.agent ?? {}),
    trace_context: traceContextOf(p),
    origin_request_id: p.originRequestId ?? null,
  });
  return raw === undefined ? undefined : tableRow(agentRuns, raw);
}

/** The stored trace_context: null when tracing is off (nothing to continue). */
function traceContextOf(p: SubmitRunInput): string | null {
  const carrier = p.traceCarrier;
  return carrier === undefined || Object.keys(carrier).length === 0
    ? null
    : JSON.stringify(carrier);
}

/** Pending root runs of `uid`, counted up to `max` (enough to compare with it). */
function queuedRuns(uid: SQLWrapper | string, max: SQLWrapper | number): SQL {
  return sql`(select count(*) from (select 1 from ${agentRuns}
    where uid = ${uid} and status = 'pending' and parent_run_id is null
    limit ${max}::int) queued)`;
}

function maxQueuedOf(deps: SubmitRunDeps): number {
  return deps.maxQueuedRuns ?? DEFAULT_APP_LIMITS.maxQueuedRunsPerUid;
}

async function refuseIfQueueFull(
  deps: SubmitRunDeps,
  db: DbOrTransaction,
  uid: string,
): Promise<void> {
  const max = maxQueuedOf(deps);
  const [row] = await executeRows<{ full: boolean }>(
    db,
    sql`select ${queuedRuns(uid, max)} >= ${max}::int as full`,
  );
  if (row?.full !== true) return;
  throw domainError("queued_runs_limit", {
    details: {
      max_queued_runs: max,
      retry_after_seconds:
        deps.queuedRunsRetryAfterSeconds ?? DEFAULT_APP_LIMITS.queuedRunsRetryAfterSeconds,
    },
  });
}

async function dispatchAfterCommit(
  deps: SubmitRunDeps,
  runId: string,
  trace: TraceContext | undefined,
): Promise<void> {
  // Not tied to the client's connection: once committed, the run is sent even if the
  // client has gone away.
  try {
    await withDeadline(deps.queueSendTimeoutMs, (signal) =>
      deps.runQueue.dispatchRun(runId, signal, trace),
    );
  } catch (error) {
    deps.logger.warn(
      { err: error, run_id: runId },
      "run dispatch failed; the sweeper will send it",
    );
    // Best effort: cleared means "due now" for the sweeper instead of after its
    // re-dispatch threshold. If this fails too, the threshold still catches the run.
    await deps.db
      .update(agentRuns)
      .set({ dispatchedAt: null })
      .where(and(eq(agentRuns.runId, runId), eq(agentRuns.status, "pending")))
      .catch((cause: unknown) =>
        deps.logger.warn({ err: cause, run_id: runId }, "could not mark run for the sweeper"),
      );
  }
}

async function findByIdempotencyKey(
  db: Db,
  p: SubmitRunInput,
  key: string,
  hash: string,
): Promise<SubmittedRun | undefined> {
  const { uid } = p;
  const [found] = await db
    .select({ hash: requests.requestHash, threadId: requests.threadId, run: agentRuns })
    .from(requests)
    .innerJoin(
      agentRuns,
      and(eq(agentRuns.requestId, requests.id), eq(agentRuns.uid, requests.uid)),
    )
    .where(and(eq(requests.uid, uid), eq(requests.idempotencyKey, key)));
  if (found === undefined) return undefined;
  if (found.hash !== hash) throw domainError("idempotency_key_reused");
  if (p.target.kind === "thread") return { run: found.run, thread: undefined };
  // The thread as it is now, even if deleted since: the replay names the same thread.
  const thread = await findThreadIncludingDeleted(db, uid, found.threadId);
  if (thread === undefined)
    throw new Error(`thread ${found.threadId} of a stored request is missing`);
  return { run: found.run, thread };
}
