import { type ClusterDeps, DATA_PLANE_PORT, type Input } from "./cluster-deps.ts";

export type DataPlaneAlbArgs = {
  vpcId: Input<string>;
  internal: boolean;
  /** Public subnets for an internet-facing ALB, private ones for an internal one. */
  subnetIds: Input<string[]>;
  securityGroupId: Input<string>;
  certificateArn: Input<string>;
  /** Set: an alias record `hostName` → the ALB in this Route 53 zone. */
  dns?: { zoneId: string; hostName: string };
};

/** The node's readiness (agent-host/data-plane/routes/health-routes.ts): 503 until it can take work. */
export const DATA_PLANE_HEALTH_PATH = "/readyz";

/**
 * One HTTPS URL for every node's data plane. Any node can serve any request: the data
 * root is the shared filesystem and capabilities are verified on each node with the same
 * public key, so plain round-robin works for many nodes. TLS ends at the ALB (certificate
 * from settings, TLS 1.2+); ALB → node is HTTP inside the VPC, admitted by the nodes'
 * group from the ALB's group only. A node whose /readyz fails (starting, quiesced tier
 * down, Postgres unreachable) gets no traffic and, after the grace period, is replaced.
 */
export function dataPlaneAlb(d: ClusterDeps, args: DataPlaneAlbArgs) {
  const loadBalancer = new d.aws.lb.LoadBalancer("DataPlaneAlb", {
    loadBalancerType: "application",
    internal: args.internal,
    subnets: args.subnetIds,
    securityGroups: [args.securityGroupId],
    dropInvalidHeaderFields: true,
    // File uploads and downloads stream through; an idle minute is not the end of one.
    idleTimeout: 300,
  });
  const targetGroup = new d.aws.lb.TargetGroup("DataPlaneTargets", {
    vpcId: args.vpcId,
    targetType: "instance",
    protocol: "HTTP",
    port: DATA_PLANE_PORT,
    // Requests in flight on a node leaving the group get this long to finish.
    deregistrationDelay: 60,
    healthCheck: {
      enabled: true,
      protocol: "HTTP",
      path: DATA_PLANE_HEALTH_PATH,
      port: "traffic-port",
      matcher: "200",
      interval: 15,
      // Above /readyz's own 2 s deadline per part.
      timeout: 5,
      healthyThreshold: 2,
      unhealthyThreshold: 3,
    },
  });
  const listener = new d.aws.lb.Listener("DataPlaneHttps", {
    loadBalancerArn: loadBalancer.arn,
    protocol: "HTTPS",
    port: 443,
    certificateArn: args.certificateArn,
    sslPolicy: "ELBSecurityPolicy-TLS13-1-2-2021-06",
    defaultActions: [{ type: "forward", targetGroupArn: targetGroup.arn }],
  });
  // IPv4 alias to the ALB, health-evaluated: the name follows the balancer, no TTL to wait.
  const record =
    args.dns === undefined
      ? undefined
      : new d.aws.route53.Record("DataPlaneDns", {
          zoneId: args.dns.zoneId,
          name: args.dns.hostName,
          type: "A",
          aliases: [
            { name: loadBalancer.dnsName, zoneId: loadBalancer.zoneId, evaluateTargetHealth: true },
          ],
        });
  return { loadBalancer, targetGroup, listener, record };
}
