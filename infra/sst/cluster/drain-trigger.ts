import type { ClusterDeps, Input } from "./cluster-deps.ts";
import { TERMINATING } from "./node-group.ts";

export type DrainTriggerArgs = {
  groupName: Input<string>;
  drainerArn: Input<string>;
  drainerName: Input<string>;
};

/** EventBridge's detail type for TERMINATING lifecycle actions. */
export const TERMINATE_ACTION_EVENT = "EC2 Instance-terminate Lifecycle Action";

/**
 * Every termination lifecycle action of the node group, and only of it, invokes the
 * drainer (functions/entry/node-drainer.ts), which quiesces the node, waits for its runs
 * and completes the action.
 */
export function drainTrigger(d: ClusterDeps, args: DrainTriggerArgs) {
  const rule = new d.aws.cloudwatch.EventRule("NodeDrainRule", {
    description: "Workcell: drain an agent-host node before the Auto Scaling group ends it",
    eventPattern: d.pulumi.output(args.groupName).apply((name) =>
      JSON.stringify({
        source: ["aws.autoscaling"],
        "detail-type": [TERMINATE_ACTION_EVENT],
        detail: { AutoScalingGroupName: [name], LifecycleTransition: [TERMINATING] },
      }),
    ),
  });
  new d.aws.cloudwatch.EventTarget("NodeDrainTarget", { rule: rule.name, arn: args.drainerArn });
  new d.aws.lambda.Permission("NodeDrainInvoke", {
    action: "lambda:InvokeFunction",
    function: args.drainerName,
    principal: "events.amazonaws.com",
    sourceArn: rule.arn,
  });
  return { rule };
}
