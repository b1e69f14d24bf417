import type { ClusterDeps, Input, Output, Resource } from "./cluster-deps.ts";

export type NodeGroupArgs = {
  instanceType: string;
  nodeCount: number;
  maxCount: number;
  volumeGb: number;
  drainMinutes: number;
  subnetIds: Output<string[]>;
  securityGroupId: Input<string>;
  instanceProfileArn: Input<string>;
  targetGroupArn: Input<string>;
  /** The rendered first-boot script (renderNodeUserData), not yet base64. */
  userData: Output<string>;
  /** What must exist before a node boots (the shared filesystem's mount targets). */
  after: Resource[];
};

/** Debian's own AWS account, which publishes the official Debian 12 images. */
export const DEBIAN_AMI_OWNER = "136693071363";
/** The name of the lifecycle transition the drainer waits on. */
export const TERMINATING = "autoscaling:EC2_INSTANCE_TERMINATING";
/** First boot installs Docker, Node, the Runtime Assets (mmdebstrap): minutes, not seconds. */
export const FIRST_BOOT_GRACE_SECONDS = 1_800;
/** The drainer's own margin after the drain budget: completing the action, its logging. */
export const DRAIN_MARGIN_SECONDS = 120;

/** Graviton families (m7g, c7gn, t4g, r8gd, a1) run arm64 images. */
export function instanceArchitecture(instanceType: string): "arm64" | "amd64" {
  return /^a1\./.test(instanceType) || /^[a-z]+\d+g[a-z]*\./.test(instanceType) ? "arm64" : "amd64";
}

/**
 * The nodes: a launch template (Debian 12, IMDSv2 only with one hop so sandbox
 * containers cannot reach the instance's credentials, encrypted gp3 root) and an Auto
 * Scaling group in the private subnets, registered with the data plane's target group
 * and health-checked through it. A new launch template version (a new release, new
 * settings) rolls the nodes, each leaving through the termination lifecycle hook, whose
 * timeout bounds the drain: after it the group terminates the node anyway.
 */
export function nodeGroup(d: ClusterDeps, args: NodeGroupArgs) {
  const ami = d.aws.ec2.getAmiOutput({
    owners: [DEBIAN_AMI_OWNER],
    mostRecent: true,
    filters: [
      { name: "name", values: [`debian-12-${instanceArchitecture(args.instanceType)}-*`] },
      { name: "virtualization-type", values: ["hvm"] },
    ],
  });
  const launchTemplate = new d.aws.ec2.LaunchTemplate("NodeTemplate", {
    imageId: ami.id,
    instanceType: args.instanceType,
    iamInstanceProfile: { arn: args.instanceProfileArn },
    vpcSecurityGroupIds: [args.securityGroupId],
    userData: args.userData.apply((script) => Buffer.from(script).toString("base64")),
    metadataOptions: {
      httpEndpoint: "enabled",
      httpTokens: "required",
      httpPutResponseHopLimit: 1,
    },
    blockDeviceMappings: [
      {
        deviceName: "/dev/xvda",
        ebs: { volumeSize: args.volumeGb, volumeType: "gp3", encrypted: "true" },
      },
    ],
    updateDefaultVersion: true,
    tagSpecifications: [{ resourceType: "instance", tags: { Name: "workcell-agent-host" } }],
  });
  const group = new d.aws.autoscaling.Group(
    "Nodes",
    {
      vpcZoneIdentifiers: args.subnetIds,
      minSize: args.nodeCount,
      desiredCapacity: args.nodeCount,
      maxSize: args.maxCount,
      launchTemplate: {
        id: launchTemplate.id,
        version: launchTemplate.latestVersion.apply(String),
      },
      targetGroupArns: [args.targetGroupArn],
      healthCheckType: "ELB",
      healthCheckGracePeriod: FIRST_BOOT_GRACE_SECONDS,
      instanceRefresh: {
        strategy: "Rolling",
        preferences: {
          // One node at a time stays out: the rest keep serving while it drains.
          minHealthyPercentage: args.nodeCount > 1 ? 50 : 0,
          instanceWarmup: String(FIRST_BOOT_GRACE_SECONDS),
        },
      },
      tags: [{ key: "workcell:role", value: "agent-host", propagateAtLaunch: true }],
    },
    { dependsOn: args.after },
  );
  const drainHook = new d.aws.autoscaling.LifecycleHook("NodeDrain", {
    autoscalingGroupName: group.name,
    lifecycleTransition: TERMINATING,
    heartbeatTimeout: args.drainMinutes * 60 + DRAIN_MARGIN_SECONDS,
    // The drainer gave up or never came: the node goes anyway, its runs are handed back
    // by SIGTERM and the sweeper (node_lost) ends what remains.
    defaultResult: "CONTINUE",
  });
  return { launchTemplate, group, drainHook };
}
