import type { Db } from "../../../shared/db/client.ts";
import type { AgentRun } from "../../../shared/db/schema.ts";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import type { SubagentOutcome, SubagentSpawner } from "../agent/index.ts";
import { finishRun } from "../claim/finish-run.ts";
import { leaseLost } from "../claim/run-event-log.ts";
import type { RunFence } from "../claim/run-fence.ts";
import { type ChildRun, createChildRun } from "./create-child-run.ts";

export interface RunSubagentSpawnerDeps {
  readonly db: Db;
  readonly nodeId: string;
  readonly leaseTtlMs: number;
  readonly maxSubagentsPerRun: number;
  readonly parent: Pick<
    AgentRun,
    "runId" | "uid" | "threadId" | "runtimeScopeId" | "originRequestId"
  >;
  readonly parentFence: RunFence;
  readonly projectId: string;
  readonly model?: string;
  /**
   * Executes a committed child in this process, in the parent's sandbox, and resolves
   * once it reached a terminal status (the executor owns that).
   */
  readonly runChild: (child: ChildRun, signal: AbortSignal) => Promise<SubagentOutcome>;
}

/**
 * The agent's SubagentSpawner for one run: commits a child run (fenced by the parent's
 * claim, see create-child-run.ts), announces it, and runs it to its end. The depth limit
 * is applied by not offering `spawn_subagent` at all past it; the fan-out limit here is a
 * refusal the model sees (a 4xx WorkcellError), so it can do the work itself.
 */
export function createRunSubagentSpawner(deps: RunSubagentSpawnerDeps): SubagentSpawner {
  let spawned = 0;
  return {
    async spawn(request, signal) {
      signal.throwIfAborted();
      if (spawned >= deps.maxSubagentsPerRun) {
        throw new WorkcellError(
          "forbidden",
          `This run already started ${deps.maxSubagentsPerRun} sub-agents, the most one run may: do the rest yourself.`,
          { details: { reason: "subagent_limit", limit: deps.maxSubagentsPerRun } },
        );
      }
      spawned++;
      const child = await createChildRun(deps.db, {
        parent: deps.parent,
        parentFence: deps.parentFence,
        projectId: deps.projectId,
        task: request.task,
        ...(deps.model === undefined ? {} : { model: deps.model }),
        nodeId: deps.nodeId,
        leaseTtlMs: deps.leaseTtlMs,
      });
      // The parent's own claim is gone: fatal for the parent (tool-failure.ts).
      if (child === undefined) throw leaseLost(deps.parentFence);
      try {
        await request.onStarted({ runId: child.run.runId, threadId: child.run.threadId });
      } catch (error) {
        // The parent cannot announce it (its lease is gone): the child never ran, end it
        // rather than leave it running until its lease expires.
        await finishRun(deps.db, child.fence, child.run.threadId, 1, { status: "cancelled" });
        throw error;
      }
      return deps.runChild(child, signal);
    },
  };
}
