import { and, asc, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import { executeRows } from "../../shared/db/execute-rows.ts";
import { agentRuns } from "../../shared/db/schema.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { extractTrace, noTracing, type Tracing } from "../../shared/telemetry/tracing.ts";
import type { RunQueue } from "../queue/run-queue.ts";
import type { DatabaseUptime } from "./database-uptime.ts";

/**
 * Advisory lock making the sweep single-instance: the two-int form, in the Workcell key
 * space (0x57434c4c = "WCLL"; id 1 is the migration lock in infra/db/migrate.ts).
 */
export const SWEEPER_LOCK_KEYS = [0x57434c4c, 2] as const;

export type SweeperLimits = {
  /**
   * A pending run whose last dispatch is older than this is sent again: its message was
   * lost, or the submitter died between commit and send. Longer than any sane send, so
   * a run is not sent twice just because a submitter is slow.
   */
  redispatchAfterMs: number;
  /** Runs handled per sweep; the next sweep takes the rest (oldest first). */
  maxRunsPerSweep: number;
  /** How long one sweep may spend sending to the queue. */
  sendTimeoutMs: number;
};

export const DEFAULT_SWEEPER_LIMITS: SweeperLimits = {
  redispatchAfterMs: 60_000,
  maxRunsPerSweep: 500,
  sendTimeoutMs: 10_000,
};

export type SweepResult =
  | { readonly ran: false; readonly reason: "another sweeper holds the lock" }
  | { readonly ran: true; readonly sent: readonly string[]; readonly failed: readonly string[] };

export type SweeperDeps = {
  readonly db: Db;
  readonly runQueue: RunQueue;
  readonly logger: Logger;
  readonly limits?: Partial<SweeperLimits>;
  /** A node silent for this long is lost (shared/runs/node-liveness.ts); default 30 s. */
  readonly nodeTtlMs?: number;
  /** The nodes' run lease TTL: the grace after an outage (decision 0149); default 30 s. */
  readonly leaseTtlMs?: number;
  /** What this sweeper saw of database outages (sweeper-loop.ts keeps one); none: no grace. */
  readonly uptime?: DatabaseUptime;
  /**
   * Count silence only while the database server was up (decision 0168): nodes and leases
   * are judged once it has been up for a node / lease TTL (`pg_postmaster_start_time()`).
   * For the stateless cron entries, which keep no `uptime`.
   */
  readonly sinceDatabaseStart?: boolean;
  /** Extracts the runs' stored trace context for their re-send; default off. */
  readonly tracing?: Tracing;
  /** Runs the sweep ends count in workcell_runs_total{status="failed"}. */
  readonly metrics?: Pick<WorkcellMetrics, "runs"> &
    Partial<Pick<WorkcellMetrics, "approvalDecisions">>;
};

/**
 * Re-dispatches pending root runs whose dispatch failed (`dispatched_at` cleared by the
 * submitter) or is older than `redispatchAfterMs`. A plain function, the second step of
 * `sweepRuns` (sweep-runs.ts), which every scheduler calls.
 *
 * One transaction holds `pg_try_advisory_xact_lock` (a second sweeper returns at once),
 * claims the due runs FOR UPDATE, sends them, and stamps `dispatched_at` only on those
 * SQS accepted. So a run is marked dispatched exactly when its message is on the queue;
 * a crash mid-sweep rolls the stamps back and the next sweep sends again (duplicates
 * are harmless: the worker's claim is a conditional update fenced by `attempt`).
 *
 * Sub-agent runs (parent_run_id set) are never swept: their parent's worker runs them;
 * nor are waiting runs (`waiting_since` set): every node's run worker claims them.
 */
export async function sweepPendingRuns(
  deps: SweeperDeps,
  signal: AbortSignal,
): Promise<SweepResult> {
  const limits = { ...DEFAULT_SWEEPER_LIMITS, ...deps.limits };
  const [classId, objId] = SWEEPER_LOCK_KEYS;
  return deps.db.transaction(async (tx) => {
    const [lock] = await executeRows<{ locked: boolean }>(
      tx,
      sql`select pg_try_advisory_xact_lock(${classId}::int, ${objId}::int) as locked`,
    );
    if (lock?.locked !== true)
      return { ran: false, reason: "another sweeper holds the lock" } as const;

    const due = await tx
      .select({ runId: agentRuns.runId, traceContext: agentRuns.traceContext })
      .from(agentRuns)
      .where(
        and(
          eq(agentRuns.status, "pending"),
          isNull(agentRuns.parentRunId),
          // A waiting run's message was consumed on purpose: it waits in Postgres for a
          // fair slot (docs/decisions/0037), and sending it again would change nothing.
          isNull(agentRuns.waitingSince),
          or(
            isNull(agentRuns.dispatchedAt),
            lt(
              agentRuns.dispatchedAt,
              sql`now() - make_interval(secs => ${limits.redispatchAfterMs / 1000})`,
            ),
          ),
        ),
      )
      .orderBy(asc(agentRuns.createdAt))
      .limit(limits.maxRunsPerSweep)
      // A submitter's best-effort "clear dispatched_at" must not wait on us, nor we on it.
      .for("update", { skipLocked: true });
    if (due.length === 0) return { ran: true, sent: [], failed: [] } as const;

    // A re-send continues the trace of the request that submitted the run (its stored
    // context) instead of starting a new one (docs/decisions/0054).
    const tracing = deps.tracing ?? noTracing();
    const traces = new Map(
      due.flatMap((row) =>
        row.traceContext === null ? [] : [[row.runId, extractTrace(tracing, row.traceContext)]],
      ),
    );
    const result = await deps.runQueue.dispatchRuns(
      due.map((row) => row.runId),
      AbortSignal.any([signal, AbortSignal.timeout(limits.sendTimeoutMs)]),
      traces,
    );
    if (result.sent.length > 0) {
      await tx
        .update(agentRuns)
        .set({ dispatchedAt: sql`now()` })
        .where(inArray(agentRuns.runId, [...result.sent]));
    }
    if (result.failed.length > 0) {
      deps.logger.warn(
        { failed: result.failed.length },
        "sweeper could not dispatch some runs; next sweep retries",
      );
    }
    if (result.sent.length > 0)
      deps.logger.info({ sent: result.sent.length }, "sweeper re-dispatched pending runs");
    return { ran: true, sent: result.sent, failed: result.failed } as const;
  });
}
