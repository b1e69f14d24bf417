import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import { sleepRejectOnAbort } from "../../../shared/async/sleep-reject-on-abort.ts";
import type { Db, DbOrTransaction, DbTransaction } from "../../../shared/db/client.ts";
import {
  executePreparedStatement,
  prepareStatement,
} from "../../../shared/db/execute-prepared-rows.ts";
import { executeRows } from "../../../shared/db/execute-rows.ts";
import { RUN_CANCEL_CHANNEL } from "../../../shared/runs/run-channels.ts";
import { lockTree } from "../../../shared/runs/tree-lock.ts";
import type { SandboxHandle } from "../../sandbox/sandbox-handle.ts";
import { runLogFields } from "../run-log-fields.ts";
import type { RunSandboxes } from "./run-sandboxes.ts";

export interface TreeCleanupDeps {
  readonly db: Db;
  readonly sandboxes: RunSandboxes;
  readonly logger: Logger;
  readonly limits: {
    readonly treeCleanupWaitMs: number;
    readonly treeCleanupPollMs: number;
    readonly sandboxDestroyTimeoutMs: number;
  };
}

export interface EndedRoot {
  readonly runId: string;
  readonly uid: string;
  readonly runtimeScopeId: string;
  /** The submitting request's id, for the log lines (runLogFields). */
  readonly originRequestId?: string | null;
}

export type TreeCleanupOutcome =
  /** The sandbox generation was destroyed (or was already gone: `stale`). */
  | { readonly kind: "destroyed"; readonly stale: boolean; readonly stragglers: number }
  /** Released for the keep-warm window: the next turn reuses it, the idle reaper ends it. */
  | { readonly kind: "kept_warm"; readonly stragglers: number }
  /** Another root run of the scope is running and uses the sandbox: it cleans up when it ends. */
  | { readonly kind: "kept"; readonly activeRuns: number }
  /** This root never got a sandbox: nothing of its own to destroy. */
  | { readonly kind: "no_sandbox"; readonly stragglers: number };

interface ActiveRun {
  run_id: string;
  status: string;
  in_tree: boolean;
}

/**
 * Execution-tree cleanup when a root run has ended (docs/architecture.md §4.5):
 *
 * 1. Under the tree lock (uid + scope), find the runs of the scope still active. Those
 *    of this root's tree (its descendants) get `cancel_requested` plus a NOTIFY, which
 *    their workers act on; committed before waiting, so their own final writes are not
 *    blocked by our row locks. With none of them, step 3 decides in this transaction.
 * 2. Wait for them to end, bounded by `treeCleanupWaitMs`.
 * 3. Under the tree lock again, decide: if another root's run of the scope is running, it
 *    uses the sandbox and will clean up when it ends, so keep it. Pending runs do not
 *    keep it (they have not touched it; once claimed they acquire a new generation). A
 *    straggler that did not stop in time loses its sandbox and fails `stale_generation`.
 * 4. Release the sandbox with the generation this root used: with a keep-warm window,
 *    mark it released in the same deciding transaction (the next turn reuses it, the idle
 *    reaper destroys it after the window with the generation fence, and a run that takes
 *    it first clears the mark); without one, destroy it. A newer generation is never
 *    touched (the manager fences on it).
 *
 * Why the destroy runs right after the deciding transaction instead of inside it: the
 * manager's destroy uses its own connection, and no transaction may wait on another
 * pooled connection (a full pool deadlocks; docs/decisions/0091), nor tie one up for a
 * whole container drain. What keeps a run
 * claimed after the decision off the doomed generation: the manager blocks new uses of a
 * generation synchronously when destroy is called, in the same tick as the decision
 * commits, and a claim + warm acquire needs several round trips; so in this process the
 * new run always gets a fresh generation. An agent-host on another node finds the row
 * `destroying`/`destroyed` or on another node and never reuses it. The one remaining
 * window, another agent-host process on the same node claiming and acquiring within the
 * single round trip between the commit and the manager's row claim, at worst fails that
 * run with `stale_generation`; it never runs on a wrong sandbox.
 *
 * Two root conversations never share a sandbox (their scopes differ), so this only ever
 * weighs runs of the same root thread.
 */
export async function cleanupExecutionTree(
  deps: TreeCleanupDeps,
  root: EndedRoot,
  handle: SandboxHandle | undefined,
  signal: AbortSignal,
): Promise<TreeCleanupOutcome> {
  const log = deps.logger.child({
    ...runLogFields({ ...root, originRequestId: root.originRequestId ?? null }),
    ...(handle ? { sandbox_id: handle.sandboxId, generation: handle.generation } : {}),
  });
  type Decision = {
    others: number;
    left: string[];
    warm: Awaited<ReturnType<RunSandboxes["keepWarm"]>> | undefined;
  };
  /** Step 3, under the tree lock `tx` holds, from the scope's active runs read in it. */
  const decide = async (tx: DbTransaction, active: ActiveRun[]): Promise<Decision> => {
    // The root itself running again: it paused for an approval and was resumed (a new
    // claim) before this cleanup of its earlier execution ran; the resume uses the sandbox
    // and cleans up when it ends (decision 0175).
    const resumed = resumedRoot(active, root) ? 1 : 0;
    const others = resumed + active.filter((r) => !r.in_tree && r.status === "running").length;
    const left = active.filter((r) => r.in_tree && r.run_id !== root.runId).map((r) => r.run_id);
    // Under the tree lock, so no run of the scope is claimed between decision and mark.
    // Stragglers that did not stop lose the sandbox instead: it is destroyed below.
    const keep = others === 0 && left.length === 0 && handle !== undefined;
    return { others, left, warm: keep ? await deps.sandboxes.keepWarm(handle, tx) : undefined };
  };
  // Steps 1 and 3 share one transaction when the tree has no straggler (every turn but a
  // cancelled one): the same lock and the same read decide, one round trip less.
  const first = await deps.db.transaction(async (tx) => {
    await lockTree(tx, root.uid, root.runtimeScopeId);
    const active = await activeRunsOfScope(tx, root);
    // A resumed root's sub-agents are the resume's, not stragglers of this execution.
    const mine = resumedRoot(active, root)
      ? []
      : active.filter((r) => r.in_tree && r.run_id !== root.runId);
    if (mine.length === 0) return { stragglers: [], decision: await decide(tx, active) };
    for (const run of mine) {
      await tx.execute(
        sql`update agent_runs set cancel_requested = true
            where run_id = ${run.run_id} and status in ('pending', 'running')`,
      );
      await tx.execute(sql`select pg_notify(${RUN_CANCEL_CHANNEL}::text, ${run.run_id}::text)`);
    }
    return { stragglers: mine.map((r) => r.run_id), decision: undefined };
  });
  const { stragglers } = first;
  let decision = first.decision;
  if (decision === undefined) {
    log.warn({ stragglers }, "runs of the ended tree still active; cancelling them first");
    await waitForEnd(deps, root, stragglers, signal);
    decision = await deps.db.transaction(async (tx) => {
      await lockTree(tx, root.uid, root.runtimeScopeId);
      return decide(tx, await activeRunsOfScope(tx, root));
    });
  }
  if (decision.others > 0) {
    log.info({ active_runs: decision.others }, "scope still in use; sandbox kept");
    return { kind: "kept", activeRuns: decision.others };
  }
  if (decision.left.length > 0) {
    log.warn({ stragglers: decision.left }, "tree runs did not stop in time; destroying anyway");
  }
  if (handle === undefined) return { kind: "no_sandbox", stragglers: stragglers.length };
  if (decision.warm === "kept") {
    log.info("execution tree ended; sandbox kept warm for the next turn");
    // After the commit: the uid's older warm generations beyond its bound go now.
    const evicted = await deps.sandboxes
      .evictWarm(
        root.uid,
        AbortSignal.any([signal, AbortSignal.timeout(deps.limits.sandboxDestroyTimeoutMs)]),
      )
      .catch((error: unknown) => {
        log.warn({ err: error }, "could not evict older warm sandboxes; the reaper will");
        return [];
      });
    if (evicted.length > 0) log.info({ sandbox_ids: evicted }, "older warm sandboxes evicted");
    return { kind: "kept_warm", stragglers: stragglers.length };
  }
  // Called in the same tick as the commit above returns: the manager blocks new uses of
  // the generation synchronously, before its first await (see the comment at the top).
  const out = await deps.sandboxes.destroy(
    handle,
    AbortSignal.any([signal, AbortSignal.timeout(deps.limits.sandboxDestroyTimeoutMs)]),
  );
  log.info({ stale: !out.ok }, "execution tree ended; sandbox destroyed");
  return { kind: "destroyed", stale: !out.ok, stragglers: stragglers.length };
}

/**
 * Whether the ended root is `running` again. Its execution recorded its outcome before the
 * cleanup, so only a later claim makes it running: an approval's resume (decision 0136).
 */
function resumedRoot(active: readonly ActiveRun[], root: EndedRoot): boolean {
  return active.some((r) => r.run_id === root.runId && r.status === "running");
}

/** Every tree cleanup reads it: a named statement, planned once per connection (0183). */
const ACTIVE_RUNS_OF_SCOPE = prepareStatement(
  "active_runs_of_scope",
  sql`with recursive tree as (
        select run_id from agent_runs where run_id = ${sql.placeholder("run_id")}::uuid
        union
        select r.run_id from agent_runs r join tree t on r.parent_run_id = t.run_id
      )
      select a.run_id, a.status, (a.run_id in (select run_id from tree)) as in_tree
      from agent_runs a
      where a.uid = ${sql.placeholder("uid")}::text
        and a.runtime_scope_id = ${sql.placeholder("scope")}::uuid
        and a.status in ('pending', 'running')`,
);

/** Active runs of the root's scope, marked whether they descend from the root. */
async function activeRunsOfScope(db: DbOrTransaction, root: EndedRoot): Promise<ActiveRun[]> {
  return executePreparedStatement<ActiveRun>(db, ACTIVE_RUNS_OF_SCOPE, {
    run_id: root.runId,
    uid: root.uid,
    scope: root.runtimeScopeId,
  });
}

async function waitForEnd(
  deps: TreeCleanupDeps,
  root: EndedRoot,
  runIds: readonly string[],
  signal: AbortSignal,
): Promise<void> {
  const deadline = performance.now() + deps.limits.treeCleanupWaitMs;
  while (performance.now() < deadline) {
    const [row] = await executeRows<{ active: number | string }>(
      deps.db,
      sql`select count(*) as active from agent_runs
          where uid = ${root.uid} and run_id in (${sql.join(
            runIds.map((id) => sql`${id}`),
            sql`, `,
          )}) and status in ('pending', 'running')`,
    );
    if (Number(row?.active ?? 0) === 0) return;
    await sleepRejectOnAbort(deps.limits.treeCleanupPollMs, signal);
  }
}
