import { and, eq, inArray, type SQL, sql } from "drizzle-orm";
import type { DbTransaction } from "../db/client.ts";
import { agentRuns, type RunError, runEvents, sandboxes } from "../db/schema.ts";
import { sandboxId as sandboxIdOf } from "../identity/sandbox-id.ts";
import { insertTerminalEvent } from "./insert-terminal-event.ts";
import { lockTree } from "./tree-lock.ts";

export const NODE_LOST_ERROR: RunError = Object.freeze({
  code: "node_lost",
  message:
    "The agent-host running this run stopped answering, so the run was ended. Its commands may have partly run: check the Workdir, then submit the task again.",
});

/** What a lost run's own events say about its commands (issue 38: say what is known). */
export type LostRunCommands = "none_started" | "all_completed" | "one_unfinished";

/** The node_lost ending of a run, its message saying what is known of its commands. */
export function nodeLostError(commands: LostRunCommands): RunError {
  switch (commands) {
    case "none_started":
      return {
        code: "node_lost",
        message:
          "The agent-host running this run stopped answering, so the run was ended. No command of it had started: nothing ran in its sandbox; submit the task again.",
      };
    case "all_completed":
      return {
        code: "node_lost",
        message:
          "The agent-host running this run stopped answering, so the run was ended. Every command it started had completed and is recorded (see the run's events and changes); its ending was not: check the Workdir, then submit the task again if it is not done.",
      };
    case "one_unfinished":
      return NODE_LOST_ERROR;
  }
}

/** Per run: started and completed tool events, so the message can say what ran. */
async function lostRunCommands(
  tx: DbTransaction,
  runIds: readonly string[],
): Promise<Map<string, LostRunCommands>> {
  const rows = await tx
    .select({
      runId: runEvents.runId,
      started: sql<number>`(count(*) filter (where ${runEvents.type} = 'tool.started'))::int`,
      completed: sql<number>`(count(*) filter (where ${runEvents.type} = 'tool.completed'))::int`,
    })
    .from(runEvents)
    .where(inArray(runEvents.runId, [...runIds]))
    .groupBy(runEvents.runId);
  const known = new Map<string, LostRunCommands>(runIds.map((id) => [id, "none_started"]));
  for (const row of rows) {
    if (row.started === 0) continue;
    known.set(row.runId, row.completed >= row.started ? "all_completed" : "one_unfinished");
  }
  return known;
}

/** One execution-tree scope a sweep ended runs in. */
export interface ExpiredScope {
  readonly uid: string;
  readonly runtimeScopeId: string;
  readonly sandboxId: string;
  /** Runs ended `failed/node_lost` in this call. */
  readonly runIds: readonly string[];
  /**
   * The sandbox generation marked `failed` for the reconciler of its node to remove; null
   * when the scope had none running, or a run of the scope still runs on that sandbox's
   * node and uses it.
   */
  readonly releasedSandbox: { readonly generation: number; readonly nodeId: string } | null;
}

/**
 * Ends, in one transaction under the scope's tree lock, the scope's running runs that
 * `which` selects (re-read FOR UPDATE, so a heartbeat that won meanwhile keeps its run):
 * status `failed/node_lost` with the terminal event, its message saying what the run's
 * events show of its commands (none started, all completed, or one unfinished). Then releases the scope's running
 * sandbox row (marks it `failed`, which makes its node's reconciler remove the container
 * and the scope's next run create a new generation) unless a run of the scope is still
 * running on the node that holds it. A run of the scope claimed by another node does not
 * keep the row: it cannot use a sandbox on another node, and keeping the row would bounce
 * it (`sandbox_on_other_node`) for as long as the row lives.
 */
export async function endScopeNodeLost(
  tx: DbTransaction,
  scope: { uid: string; runtimeScopeId: string },
  which: SQL | undefined,
): Promise<ExpiredScope | undefined> {
  await lockTree(tx, scope.uid, scope.runtimeScopeId);
  const inScope = and(
    eq(agentRuns.uid, scope.uid),
    eq(agentRuns.runtimeScopeId, scope.runtimeScopeId),
    eq(agentRuns.status, "running"),
  );
  const runs = await tx
    .select({ runId: agentRuns.runId })
    .from(agentRuns)
    .where(and(inScope, which))
    .for("update");
  if (runs.length === 0) return undefined;
  const runIds = runs.map((r) => r.runId);
  const known = await lostRunCommands(tx, runIds);
  for (const runId of runIds) {
    const error = nodeLostError(known.get(runId) ?? "one_unfinished");
    await tx
      .update(agentRuns)
      .set({ status: "failed", error, finishedAt: sql`now()` })
      .where(eq(agentRuns.runId, runId));
    await insertTerminalEvent(tx, runId, scope.uid, undefined, { status: "failed", error });
  }

  const sandboxId = sandboxIdOf(scope.uid, scope.runtimeScopeId);
  const [row] = await tx
    .select({ generation: sandboxes.generation, nodeId: sandboxes.nodeId })
    .from(sandboxes)
    .where(and(eq(sandboxes.sandboxId, sandboxId), eq(sandboxes.state, "running")));
  let releasedSandbox: ExpiredScope["releasedSandbox"] = null;
  if (row !== undefined) {
    const [user] = await tx
      .select({ runId: agentRuns.runId })
      .from(agentRuns)
      .where(and(inScope, eq(agentRuns.ownerNode, row.nodeId)))
      .limit(1);
    if (user === undefined) {
      const [released] = await tx
        .update(sandboxes)
        .set({ state: "failed", updatedAt: sql`now()` })
        .where(
          and(
            eq(sandboxes.sandboxId, sandboxId),
            eq(sandboxes.generation, row.generation),
            eq(sandboxes.state, "running"),
          ),
        )
        .returning({ generation: sandboxes.generation, nodeId: sandboxes.nodeId });
      if (released !== undefined) releasedSandbox = released;
    }
  }
  return { ...scope, sandboxId, runIds, releasedSandbox };
}
