import { expireApprovals } from "../../shared/approvals/expire-approvals.ts";
import { type ExpiredScope, failExpiredLeases } from "../../shared/runs/fail-expired-leases.ts";
import { failLostNodes, type LostNodesSweep } from "../../shared/runs/fail-lost-nodes.ts";
import { DEFAULT_NODE_TTL_MS } from "../../shared/runs/node-liveness.ts";
import {
  DEFAULT_SWEEP_LEASE_TTL_MS,
  databaseServerUpForMs,
  probeDatabaseUptime,
} from "./database-uptime.ts";
import { type SweeperDeps, type SweepResult, sweepPendingRuns } from "./dispatch-sweeper.ts";

/** What one sweep did, step by step. */
export type RunSweepResult = {
  /** Step 0: runs and sandbox rows of nodes past the node TTL (empty when none). */
  readonly lostNodes: LostNodesSweep;
  /** Step 1: scopes whose expired runs were ended `failed/node_lost` (none: empty). */
  readonly nodeLost: readonly ExpiredScope[];
  /** Step 1b: runs whose approval expired (pending again, sent by step 2). */
  readonly expiredApprovals: readonly string[];
  /** Step 2: the re-dispatch of pending root runs. */
  readonly dispatch: SweepResult;
};

type Settled<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: unknown };

/**
 * The control plane's periodic pass over run state (docs/architecture.md §4.7, §4.8, §10): (0)
 * nodes past the node TTL have their running runs ended `failed/node_lost` and all their
 * sandbox rows released (shared/runs/fail-lost-nodes.ts); (1) runs
 * whose lease expired (their node died or lost the database for a whole lease) end
 * `failed/node_lost` with their `run.completed` event, and their scope's sandbox row is
 * handed to its node's reconciler (shared/runs/fail-expired-leases.ts); (2) pending runs
 * whose queue message was lost are sent again (dispatch-sweeper.ts). Every scheduler calls
 * this: the Lambda cron entry, the Workers Cron Trigger, the Node entry's and the local
 * Workcell's loop (sweeper-loop.ts).
 *
 * Lost nodes and leases first: ending a dead run releases its scope's sandbox row, so a run of the same
 * scope re-dispatched in step 2 is not handed back for a sandbox owned by a dead node.
 *
 * The steps run one after the other, never concurrently: the Lambda and Workers entries
 * have one connection, and each step runs its own transactions. Step 1
 * takes no sweeper lock: each scope is decided under its tree lock with the runs re-read
 * FOR UPDATE, so two sweeps at once end each run once (the second finds it not running).
 *
 * A step that throws (database down, a bug) does not stop the others; the errors are
 * rethrown after all ran, so schedulers still see and log the failure.
 *
 * Grace after an outage (decision 0149): a sweeper that saw the database away
 * (`deps.uptime`) judges nodes and leases only once the database has been back for a
 * node TTL / a lease TTL, so every node that is alive has had its beats answered first;
 * a node that is really dead is still swept, one TTL later. A sweeper with no memory
 * (`deps.sinceDatabaseStart`, decision 0168) gets the same grace after a database restart
 * from the server's start time: judging silence from max(last beat, server start) is the
 * same as waiting a TTL after the start, since no row beat after the start can be silent
 * for longer than the server has been up.
 */
export async function sweepRuns(deps: SweeperDeps, signal: AbortSignal): Promise<RunSweepResult> {
  const nodeTtlMs = deps.nodeTtlMs ?? DEFAULT_NODE_TTL_MS;
  const upForMs = Math.min(
    await probeDatabaseUptime(deps.db, deps.uptime, signal),
    deps.sinceDatabaseStart
      ? await databaseServerUpForMs(deps.db, signal)
      : Number.POSITIVE_INFINITY,
  );
  const judgeNodes = upForMs >= nodeTtlMs;
  const judgeLeases = upForMs >= (deps.leaseTtlMs ?? DEFAULT_SWEEP_LEASE_TTL_MS);
  if (!judgeNodes || !judgeLeases) {
    deps.logger.info(
      { up_for_ms: upForMs, judge_nodes: judgeNodes, judge_leases: judgeLeases },
      "sweeper waits a grace after a database outage before judging nodes and leases",
    );
  }
  const lost = judgeNodes
    ? await settle(() => failLostNodes(deps.db, nodeTtlMs, signal))
    : ({ ok: true, value: { scopes: [], releasedSandboxes: [] } } as const);
  if (lost.ok) {
    logLostNodes(deps, lost.value);
    countFailed(deps, lost.value.scopes);
  }
  const leases = judgeLeases
    ? await settle(() => failExpiredLeases(deps.db, undefined, signal))
    : ({ ok: true, value: [] } as const);
  if (leases.ok) {
    logNodeLost(deps, leases.value);
    countFailed(deps, leases.value);
  }
  // Before the dispatch step, which sends the runs an expiry made pending again.
  const expiries = await settle(() => expireApprovals(deps.db, signal));
  if (expiries.ok && expiries.value.length > 0) {
    deps.logger.info({ run_ids: expiries.value }, "sweeper expired approvals");
    deps.metrics?.approvalDecisions?.inc({ status: "expired" }, expiries.value.length);
  }
  const dispatch = await settle(() => sweepPendingRuns(deps, signal));
  const errors = [lost, leases, expiries, dispatch].flatMap((s) => (s.ok ? [] : [s.error]));
  if (errors.length > 1) throw new AggregateError(errors, "several sweep steps failed");
  if (!lost.ok || !leases.ok || !expiries.ok || !dispatch.ok) throw errors[0];
  return {
    lostNodes: lost.value,
    nodeLost: leases.value,
    expiredApprovals: expiries.value,
    dispatch: dispatch.value,
  };
}

function logLostNodes(deps: SweeperDeps, sweep: LostNodesSweep): void {
  for (const scope of sweep.scopes) {
    deps.logger.warn(
      { uid: scope.uid, run_ids: scope.runIds, sandbox_id: scope.sandboxId },
      "sweeper ended runs of a lost node (node_lost)",
    );
  }
  for (const row of sweep.releasedSandboxes) {
    deps.logger.warn(
      { sandbox_id: row.sandboxId, generation: row.generation, node_id: row.nodeId },
      "sweeper released a sandbox of a lost node",
    );
  }
}

function countFailed(deps: SweeperDeps, scopes: readonly ExpiredScope[]): void {
  const ended = scopes.reduce((sum, scope) => sum + scope.runIds.length, 0);
  if (ended > 0) deps.metrics?.runs.inc({ status: "failed" }, ended);
}

function logNodeLost(deps: SweeperDeps, scopes: readonly ExpiredScope[]): void {
  for (const scope of scopes) {
    deps.logger.warn(
      {
        uid: scope.uid,
        run_ids: scope.runIds,
        sandbox_id: scope.sandboxId,
        generation: scope.releasedSandbox?.generation,
        node_id: scope.releasedSandbox?.nodeId,
      },
      "sweeper ended runs whose lease expired (node lost)",
    );
  }
}

async function settle<T>(step: () => Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await step() };
  } catch (error) {
    return { ok: false, error };
  }
}
