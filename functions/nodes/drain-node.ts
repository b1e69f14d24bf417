import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { z } from "zod";
import type { Db } from "../../shared/db/client.ts";
import { listNodes, setNodeState } from "./node-store.ts";

// A node the Auto Scaling group is taking out (scale-in, instance refresh, an unhealthy
// node) is quiesced and drained before it goes: the termination lifecycle hook sends an
// EventBridge event to the drainer Lambda (functions/entry/node-drainer.ts), which runs
// this. The node id is the instance id (the node's user data sets NODE_ID from IMDS).

/** The part of EventBridge's "EC2 Instance-terminate Lifecycle Action" event we use. */
export const lifecycleEventSchema = z.object({
  detail: z.object({
    LifecycleActionToken: z.string().min(1),
    AutoScalingGroupName: z.string().min(1),
    LifecycleHookName: z.string().min(1),
    EC2InstanceId: z.string().regex(/^i-[0-9a-f]{8,32}$/, "must be an EC2 instance id"),
    LifecycleTransition: z.literal("autoscaling:EC2_INSTANCE_TERMINATING"),
  }),
});
export type LifecycleEvent = z.infer<typeof lifecycleEventSchema>;

export type CompleteLifecycleAction = (
  action: {
    AutoScalingGroupName: string;
    LifecycleHookName: string;
    LifecycleActionToken: string;
    InstanceId: string;
    LifecycleActionResult: "CONTINUE";
  },
  signal: AbortSignal,
) => Promise<void>;

export type DrainNodeDeps = {
  db: Db;
  nodeTtlMs: number;
  logger: Logger;
  completeLifecycleAction: CompleteLifecycleAction;
  /** Between reads of the node's row (its heartbeat updates the counts). */
  pollMs: number;
};

/**
 * `drained`: no run and no sandbox left at its last heartbeat; `lost`: the node stopped
 * heartbeating (its runs are the sweeper's, node_lost); `unknown_node`: it never
 * registered (a boot that failed); `budget_spent`: runs still going when the budget ran
 * out; they are handed back by the node's SIGTERM or ended by the sweeper.
 */
export type DrainOutcome = "drained" | "lost" | "unknown_node" | "budget_spent";

/**
 * Quiesce (the same state change as `POST /v1/admin/nodes/{id}/quiesce`), wait until the
 * node has no running run and no live sandbox, or is lost, or `budget` aborts; then let
 * the Auto Scaling group go on in every case. The completion has its own deadline: the
 * hook's timeout would complete it anyway, later.
 */
export async function drainNode(
  deps: DrainNodeDeps,
  event: LifecycleEvent,
  budget: AbortSignal,
): Promise<DrainOutcome> {
  const nodeId = event.detail.EC2InstanceId;
  const outcome = await quiesceAndWait(deps, nodeId, budget);
  deps.logger.info(
    { node_id: nodeId, outcome },
    "node drain finished; completing the lifecycle action",
  );
  await deps.completeLifecycleAction(
    {
      AutoScalingGroupName: event.detail.AutoScalingGroupName,
      LifecycleHookName: event.detail.LifecycleHookName,
      LifecycleActionToken: event.detail.LifecycleActionToken,
      InstanceId: nodeId,
      LifecycleActionResult: "CONTINUE",
    },
    AbortSignal.timeout(10_000),
  );
  return outcome;
}

async function quiesceAndWait(
  deps: DrainNodeDeps,
  nodeId: string,
  budget: AbortSignal,
): Promise<DrainOutcome> {
  if (!(await setNodeState(deps.db, nodeId, "quiesced"))) return "unknown_node";
  deps.logger.info({ node_id: nodeId }, "node quiesced for its termination");
  for (;;) {
    const node = (await listNodes(deps.db, deps.nodeTtlMs)).find((n) => n.node_id === nodeId);
    if (node === undefined) return "unknown_node";
    if (node.state === "lost") return "lost";
    if (node.running_runs === 0 && node.live_sandboxes === 0) return "drained";
    deps.logger.debug(
      { node_id: nodeId, running_runs: node.running_runs, live_sandboxes: node.live_sandboxes },
      "node still draining",
    );
    try {
      await sleep(deps.pollMs, undefined, { signal: budget });
    } catch {
      return "budget_spent";
    }
  }
}
