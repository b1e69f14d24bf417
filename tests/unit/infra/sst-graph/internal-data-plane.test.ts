import { beforeAll, expect, test } from "vitest";
import {
  baseSettings,
  type Evaluated,
  evaluateCluster,
  PRIVATE_SUBNETS,
  VPC_CIDR,
} from "./evaluate-cluster.ts";

// The same graph with the other settings: an internal data plane, Graviton nodes, a
// larger group and a shorter drain (one evaluation per file: the mocks are per process).

let e: Evaluated;
beforeAll(async () => {
  e = await evaluateCluster({
    ...baseSettings,
    WORKCELL_DATA_PLANE_SCHEME: "internal",
    WORKCELL_DATA_PLANE_URL: "https://dp.internal.example.com:8443/prefix",
    WORKCELL_DATA_PLANE_HOSTED_ZONE_ID: "Z0123456789ABCDEFGHIJ",
    WORKCELL_NODE_INSTANCE_TYPE: "m7g.xlarge",
    WORKCELL_NODE_COUNT: 4,
    WORKCELL_NODE_MAX_COUNT: 8,
    WORKCELL_NODE_VOLUME_GB: 200,
    WORKCELL_NODE_DRAIN_MINUTES: 3,
  });
}, 300_000);

test("an internal data plane sits in the private subnets and admits the VPC only; nothing admits 0.0.0.0/0", () => {
  const alb = e.one("aws:lb/loadBalancer:LoadBalancer", "DataPlaneAlb");
  expect(alb.inputs).toMatchObject({ internal: true, subnets: PRIVATE_SUBNETS });
  const ingress = e.ofType("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule");
  expect(ingress.filter((r) => r.inputs.cidrIpv4 !== undefined).map((r) => r.inputs)).toEqual([
    expect.objectContaining({
      securityGroupId: "DataPlaneAlbSg-id",
      fromPort: 443,
      cidrIpv4: VPC_CIDR,
    }),
  ]);
});

test("node settings reach the group: arm64 Debian image, sizes, volume, drain bound", async () => {
  const lt = e.one("aws:ec2/launchTemplate:LaunchTemplate", "NodeTemplate");
  expect(lt.inputs.instanceType).toBe("m7g.xlarge");
  expect(lt.inputs.blockDeviceMappings).toEqual([
    { deviceName: "/dev/xvda", ebs: { encrypted: "true", volumeSize: 200, volumeType: "gp3" } },
  ]);
  expect(e.one("aws:autoscaling/group:Group", "Nodes").inputs).toMatchObject({
    minSize: 4,
    desiredCapacity: 4,
    maxSize: 8,
  });
  expect(
    e.one("aws:autoscaling/lifecycleHook:LifecycleHook", "NodeDrain").inputs.heartbeatTimeout,
  ).toBe(3 * 60 + 120);
  expect(e.amiQueries).toEqual([
    {
      owners: ["136693071363"],
      mostRecent: true,
      filters: [
        { name: "name", values: ["debian-12-arm64-*"] },
        { name: "virtualization-type", values: ["hvm"] },
      ],
    },
  ]);
});

test("with a hosted zone, the data plane's host name is an alias of the load balancer", () => {
  expect(e.ofType("aws:route53/record:Record").map((r) => r.inputs)).toEqual([
    {
      zoneId: "Z0123456789ABCDEFGHIJ",
      name: "dp.internal.example.com",
      type: "A",
      aliases: [
        { name: "dp-alb.elb.amazonaws.com", zoneId: "ZALBZONE", evaluateTargetHealth: true },
      ],
    },
  ]);
});
