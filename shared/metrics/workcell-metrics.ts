import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { abortable } from "../async/abortable.ts";
import { withDeadline } from "../async/with-deadline.ts";

/** Which HTTP app answered: the control plane (functions/) or an agent-host's data plane. */
export type HttpPlane = "api" | "data_plane";

/**
 * Seconds buckets of request, queue-wait and exec histograms: 5 ms (a warm exec, a cached
 * GET) up to 5 min (a long command, a queue backed up behind busy workers).
 */
export const SECONDS_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];

/**
 * Every series Workcell exports (docs/observability.md says what each one means), made
 * once per process (or per invocation on Lambda/Workers) in the Registry passed in and
 * handed to each part as a dependency: there is no global registry, so two Workcells in
 * one process (tests, the local mode's two planes) never mix or double-register.
 *
 * No label carries a uid, run id or path (cardinality, and they are the tenants' data):
 * routes are templates, the rest are small closed sets.
 */
export type WorkcellMetrics = {
  readonly registry: Registry;
  readonly httpRequests: Counter<"plane" | "method" | "route" | "status">;
  readonly httpRequestSeconds: Histogram<"plane" | "method" | "route">;
  /** Requests received and not yet answered, by plane: a hang shows as a number that grows. */
  readonly httpRequestsInFlight: Gauge<"plane">;
  /**
   * 1 when the database answered its last probe, 0 when it did not (in time). Set by each
   * /v1/healthz and, once probeDbOnScrape gave it a probe, at every scrape.
   */
  readonly dbUp: Gauge;
  /** Makes every scrape probe the database (bounded by DB_UP_SCRAPE_TIMEOUT_MS) for dbUp. */
  probeDbOnScrape(probe: (signal: AbortSignal) => Promise<void>): void;
  /** Runs committed by POST /v1/runs and POST /v1/threads/{id}/runs (not replays). */
  readonly runsSubmitted: Counter;
  /** Accepted POST /v1/runs/{id}/cancel (202), idempotent repeats included. */
  readonly runCancelRequests: Counter;
  /** Runs that reached a terminal status, counted where that status was written. */
  readonly runs: Counter<"status">;
  readonly runQueueWaitSeconds: Histogram;
  readonly sandboxCreates: Counter<"tier">;
  readonly sandboxDestroys: Counter<"tier">;
  readonly sandboxExecSeconds: Histogram<"tier">;
  readonly quotaRejections: Counter;
  readonly sqsErrors: Counter<"operation">;
  readonly runLeaseLosses: Counter;
  readonly runHandBacks: Counter;
  readonly reconcilerActions: Counter<"action">;
  readonly skillRefreshes: Counter<"result">;
  readonly dataPlaneBytes: Counter<"direction">;
  /** Egress proxy connections by decision: allowed, denied, dropped (over the per-sandbox bound). */
  readonly egressConnections: Counter<"decision">;
  readonly egressBytes: Counter<"direction">;
  /** Decisions on approvals, by status: approved, denied (a person), expired (the sweeper). */
  readonly approvalDecisions: Counter<"status">;
  /** Runs waiting for a person, counted in the database at each scrape (countAwaitingOnScrape). */
  readonly runsAwaitingApproval: Gauge;
  countAwaitingOnScrape(count: (signal: AbortSignal) => Promise<number>): void;
};

/** A scrape waits this long at most for the database probe behind workcell_db_up. */
export const DB_UP_SCRAPE_TIMEOUT_MS = 1_000;

/** Registers every Workcell series in `registry` (which must not hold them yet). */
export function createWorkcellMetrics(registry: Registry): WorkcellMetrics {
  const registers = [registry];
  let dbProbe: ((signal: AbortSignal) => Promise<void>) | undefined;
  let awaitingCount: ((signal: AbortSignal) => Promise<number>) | undefined;
  const runsAwaitingApproval = new Gauge({
    name: "workcell_runs_awaiting_approval",
    help: "Runs waiting for a person's decision (they hold no worker slot), across the deployment.",
    registers,
    async collect() {
      if (awaitingCount === undefined) return;
      const count = awaitingCount;
      // A database that does not answer leaves the last value: the gauge is not a probe.
      const n = await withDeadline(DB_UP_SCRAPE_TIMEOUT_MS, (signal) =>
        abortable(count(signal), signal),
      ).catch(() => undefined);
      if (n !== undefined) this.set(n);
    },
  });
  const dbUp = new Gauge({
    name: "workcell_db_up",
    help: "1 when the database answered its last probe (a health check or a scrape), 0 when it did not in time.",
    registers,
    async collect() {
      if (dbProbe === undefined) return;
      const probe = dbProbe;
      const up = await withDeadline(DB_UP_SCRAPE_TIMEOUT_MS, (signal) =>
        abortable(probe(signal), signal),
      ).then(
        () => 1,
        () => 0,
      );
      this.set(up);
    },
  });
  // Every series is registered in `registry` only; histograms all measure seconds.
  const counter = <T extends string = string>(name: string, help: string, labelNames: T[] = []) =>
    new Counter<T>({ name, help, labelNames, registers });
  const histogram = <T extends string = string>(name: string, help: string, labelNames: T[] = []) =>
    new Histogram<T>({ name, help, labelNames, buckets: [...SECONDS_BUCKETS], registers });
  return {
    registry,
    httpRequests: counter(
      "workcell_http_requests_total",
      "HTTP requests answered, by plane, method, route template and status.",
      ["plane", "method", "route", "status"],
    ),
    httpRequestSeconds: histogram(
      "workcell_http_request_duration_seconds",
      "Time from request to response headers, by plane, method and route template.",
      ["plane", "method", "route"],
    ),
    httpRequestsInFlight: new Gauge({
      name: "workcell_http_requests_in_flight",
      help: "HTTP requests received and not yet answered, by plane.",
      labelNames: ["plane"],
      registers,
    }),
    dbUp,
    probeDbOnScrape(probe) {
      dbProbe = probe;
    },
    runsSubmitted: counter(
      "workcell_runs_submitted_total",
      "Runs committed by a submission (idempotent replays not counted).",
    ),
    runCancelRequests: counter(
      "workcell_run_cancel_requests_total",
      "Accepted cancel requests (202), idempotent repeats included.",
    ),
    runs: counter(
      "workcell_runs_total",
      "Runs that reached a terminal status (succeeded, failed, cancelled).",
      ["status"],
    ),
    runQueueWaitSeconds: histogram(
      "workcell_run_queue_wait_seconds",
      "Time from a run's submission to its claim by a worker.",
    ),
    sandboxCreates: counter(
      "workcell_sandbox_creates_total",
      "Sandboxes created (one new generation each), by isolation tier.",
      ["tier"],
    ),
    sandboxDestroys: counter(
      "workcell_sandbox_destroys_total",
      "Sandbox generations destroyed, by isolation tier.",
      ["tier"],
    ),
    sandboxExecSeconds: histogram(
      "workcell_sandbox_exec_seconds",
      "Duration of one command in a sandbox as a run waits for it (fence, command, survivor sweep), by isolation tier.",
      ["tier"],
    ),
    quotaRejections: counter(
      "workcell_workspace_quota_rejections_total",
      "Writes refused with quota_exceeded (nothing written).",
    ),
    sqsErrors: counter(
      "workcell_sqs_errors_total",
      "Failed SQS calls, by operation (receive, send, delete).",
      ["operation"],
    ),
    runLeaseLosses: counter(
      "workcell_run_lease_losses_total",
      "Runs whose lease this worker lost (it stopped writing).",
    ),
    runHandBacks: counter(
      "workcell_run_hand_backs_total",
      "Runs handed back to the queue before executing.",
    ),
    reconcilerActions: counter(
      "workcell_reconciler_actions_total",
      "Reconciler actions: adopt (a live owned container this process did not hold), destroy (an orphaned, stale or dead container), mark_gone (a live row whose container is gone).",
      ["action"],
    ),
    skillRefreshes: counter(
      "workcell_skill_refreshes_total",
      "Skill projection refreshes, by result (ok, skipped, failed).",
      ["result"],
    ),
    dataPlaneBytes: counter(
      "workcell_data_plane_bytes_total",
      "File bytes the data plane wrote into workspaces (in) and served (out).",
      ["direction"],
    ),
    egressConnections: counter(
      "workcell_egress_connections_total",
      "Connections sandboxes asked the egress proxy for, by decision (allowed, denied, dropped: over the per-sandbox bound).",
      ["decision"],
    ),
    egressBytes: counter(
      "workcell_egress_bytes_total",
      "Bytes through the egress proxy, up (sandbox to host) and down.",
      ["direction"],
    ),
    approvalDecisions: counter(
      "workcell_approval_decisions_total",
      "Approvals decided, by status: approved, denied (by a person), expired (by the sweeper).",
      ["status"],
    ),
    runsAwaitingApproval,
    countAwaitingOnScrape(count) {
      awaitingCount = count;
    },
  };
}
