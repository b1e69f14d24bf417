import { Counter, Histogram, type Registry } from "prom-client";

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
};

/** Registers every Workcell series in `registry` (which must not hold them yet). */
export function createWorkcellMetrics(registry: Registry): WorkcellMetrics {
  const registers = [registry];
  return {
    registry,
    httpRequests: new Counter({
      name: "workcell_http_requests_total",
      help: "HTTP requests answered, by plane, method, route template and status.",
      labelNames: ["plane", "method", "route", "status"] as const,
      registers,
    }),
    httpRequestSeconds: new Histogram({
      name: "workcell_http_request_duration_seconds",
      help: "Time from request to response headers, by plane, method and route template.",
      labelNames: ["plane", "method", "route"] as const,
      buckets: [...SECONDS_BUCKETS],
      registers,
    }),
    runsSubmitted: new Counter({
      name: "workcell_runs_submitted_total",
      help: "Runs committed by a submission (idempotent replays not counted).",
      registers,
    }),
    runCancelRequests: new Counter({
      name: "workcell_run_cancel_requests_total",
      help: "Accepted cancel requests (202), idempotent repeats included.",
      registers,
    }),
    runs: new Counter({
      name: "workcell_runs_total",
      help: "Runs that reached a terminal status (succeeded, failed, cancelled).",
      labelNames: ["status"] as const,
      registers,
    }),
    runQueueWaitSeconds: new Histogram({
      name: "workcell_run_queue_wait_seconds",
      help: "Time from a run's submission to its claim by a worker.",
      buckets: [...SECONDS_BUCKETS],
      registers,
    }),
    sandboxCreates: new Counter({
      name: "workcell_sandbox_creates_total",
      help: "Sandboxes created (one new generation each), by isolation tier.",
      labelNames: ["tier"] as const,
      registers,
    }),
    sandboxDestroys: new Counter({
      name: "workcell_sandbox_destroys_total",
      help: "Sandbox generations destroyed, by isolation tier.",
      labelNames: ["tier"] as const,
      registers,
    }),
    sandboxExecSeconds: new Histogram({
      name: "workcell_sandbox_exec_seconds",
      help: "Duration of one command executed in a sandbox, by isolation tier.",
      labelNames: ["tier"] as const,
      buckets: [...SECONDS_BUCKETS],
      registers,
    }),
    quotaRejections: new Counter({
      name: "workcell_workspace_quota_rejections_total",
      help: "Writes refused with quota_exceeded (nothing written).",
      registers,
    }),
    sqsErrors: new Counter({
      name: "workcell_sqs_errors_total",
      help: "Failed SQS calls, by operation (receive, send, delete).",
      labelNames: ["operation"] as const,
      registers,
    }),
    runLeaseLosses: new Counter({
      name: "workcell_run_lease_losses_total",
      help: "Runs whose lease this worker lost (it stopped writing).",
      registers,
    }),
    runHandBacks: new Counter({
      name: "workcell_run_hand_backs_total",
      help: "Runs handed back to the queue before executing.",
      registers,
    }),
    reconcilerActions: new Counter({
      name: "workcell_reconciler_actions_total",
      help: "Reconciler actions: adopt (a live owned container this process did not hold), destroy (an orphaned, stale or dead container), mark_gone (a live row whose container is gone).",
      labelNames: ["action"] as const,
      registers,
    }),
    skillRefreshes: new Counter({
      name: "workcell_skill_refreshes_total",
      help: "Skill projection refreshes, by result (ok, failed).",
      labelNames: ["result"] as const,
      registers,
    }),
    dataPlaneBytes: new Counter({
      name: "workcell_data_plane_bytes_total",
      help: "File bytes the data plane wrote into workspaces (in) and served (out).",
      labelNames: ["direction"] as const,
      registers,
    }),
  };
}
