import { and, eq, inArray, lt, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client.ts";
import { agentRuns, type RunError, sandboxes } from "../db/schema.ts";
import { sandboxId as sandboxIdOf } from "../identity/sandbox-id.ts";
import { insertTerminalEvent } from "./insert-terminal-event.ts";
import { lockTree } from "./tree-lock.ts";

/** Scopes (uid, runtime scope) with expired runs examined per call; the next call takes the rest. */
export const MAX_EXPIRED_RUNS_PER_SWEEP = 500;

export const NODE_LOST_ERROR: RunError = Object.freeze({
  code: "node_lost",
  message:
    "The agent-host running this run stopped answering, so the run was ended. Its commands may have partly run: check the Workdir, then submit the task again.",
});

/** One execution-tree scope the sweep ended runs in. */
export interface ExpiredScope {
  readonly uid: string;
  readonly runtimeScopeId: string;
  readonly sandboxId: string;
  /** Runs ended `failed/node_lost` in this call. */
  readonly runIds: readonly string[];
  /**
   * The sandbox generation marked `failed` for the reconciler of its node to remove; null
   * when the scope had none running, or another run of the scope still runs and uses it.
   */
  readonly releasedSandbox: { readonly generation: number; readonly nodeId: string } | null;
}

/**
 * Ends every running run whose lease expired before `now` (its worker died or lost the
 * database for a whole lease): status `failed` with `{code: "node_lost"}` and its terminal
 * `run.completed` event. The control plane's sweep calls it (functions/runs/sweep-runs.ts;
 * it uses only shared/ and drizzle, so it runs wherever functions/ runs); `now` defaults to
 * the database clock, which is also what leases are written with. An aborted `signal`
 * stops between scopes: each scope is its own transaction, so what is left is simply the
 * next call's.
 *
 * Why not retry the run instead: its tools have side effects. A dead worker may have
 * written files, started processes or half-finished a sub-agent; running the task again
 * from the start would repeat those effects (append twice, send twice) without the user
 * knowing. Failing it with a clear code lets the user look at the Workdir and decide.
 *
 * The sandbox: per scope, under the tree lock, if no run of the scope is still running,
 * its sandbox row is marked `failed`. That row is what makes the owning node's reconciler
 * destroy the container (not live → orphan) on its next pass or restart, and makes a
 * later run of the scope create a fresh generation instead of reusing a sandbox whose
 * processes belonged to the dead run. The node that owns it is returned so callers can
 * nudge it; a dead node's containers go when it is reconciled on restart.
 *
 * Fencing: each run is re-checked FOR UPDATE under the lock (a heartbeat that extended the
 * lease meanwhile wins), and the worker's own writes are conditional on `running`, so a
 * worker that was only slow writes nothing more once this committed.
 */
export async function failExpiredLeases(
  db: Db,
  now?: Date,
  signal?: AbortSignal,
): Promise<ExpiredScope[]> {
  const cutoff: SQL = now === undefined ? sql`now()` : sql`${now.toISOString()}::timestamptz`;
  const expired = await db
    .selectDistinct({ uid: agentRuns.uid, runtimeScopeId: agentRuns.runtimeScopeId })
    .from(agentRuns)
    .where(and(eq(agentRuns.status, "running"), lt(agentRuns.leaseExpiresAt, cutoff)))
    .limit(MAX_EXPIRED_RUNS_PER_SWEEP);

  const scopes: ExpiredScope[] = [];
  for (const scope of expired) {
    if (signal?.aborted) break;
    const ended = await db.transaction(async (tx) => {
      await lockTree(tx, scope.uid, scope.runtimeScopeId);
      const runs = await tx
        .select({ runId: agentRuns.runId })
        .from(agentRuns)
        .where(
          and(
            eq(agentRuns.uid, scope.uid),
            eq(agentRuns.runtimeScopeId, scope.runtimeScopeId),
            eq(agentRuns.status, "running"),
            lt(agentRuns.leaseExpiresAt, cutoff),
          ),
        )
        .for("update");
      if (runs.length === 0) return undefined;
      const runIds = runs.map((r) => r.runId);
      await tx
        .update(agentRuns)
        .set({ status: "failed", error: NODE_LOST_ERROR, finishedAt: sql`now()` })
        .where(inArray(agentRuns.runId, runIds));
      for (const runId of runIds) {
        await insertTerminalEvent(tx, runId, scope.uid, undefined, {
          status: "failed",
          error: NODE_LOST_ERROR,
        });
      }

      const sandboxId = sandboxIdOf(scope.uid, scope.runtimeScopeId);
      const [stillRunning] = await tx
        .select({ runId: agentRuns.runId })
        .from(agentRuns)
        .where(
          and(
            eq(agentRuns.uid, scope.uid),
            eq(agentRuns.runtimeScopeId, scope.runtimeScopeId),
            eq(agentRuns.status, "running"),
          ),
        )
        .limit(1);
      let releasedSandbox: ExpiredScope["releasedSandbox"] = null;
      if (stillRunning === undefined) {
        const [row] = await tx
          .update(sandboxes)
          .set({ state: "failed", updatedAt: sql`now()` })
          .where(and(eq(sandboxes.sandboxId, sandboxId), eq(sandboxes.state, "running")))
          .returning({ generation: sandboxes.generation, nodeId: sandboxes.nodeId });
        if (row !== undefined) releasedSandbox = row;
      }
      return { ...scope, sandboxId, runIds, releasedSandbox };
    });
    if (ended !== undefined) scopes.push(ended);
  }
  return scopes;
}
