import { type ClusterDeps, DATA_PLANE_PORT, type Input, NFS_PORT } from "./cluster-deps.ts";

export type ClusterSecurityGroupsArgs = {
  vpcId: Input<string>;
  /** Who may reach the load balancer's HTTPS listener: the internet or the VPC's range. */
  albClientCidr: Input<string>;
};

/**
 * Three groups and the only rules between them: clients → ALB on 443; ALB → nodes on the
 * data-plane port; nodes → the shared filesystem on NFS. Nodes admit nothing else inbound
 * (no SSH: operators use SSM or the console) and reach out freely (Postgres, SQS, S3,
 * Debian and npm through the NAT, model servers). The rules are separate resources so
 * the ALB and node groups can name each other without a cycle, and no group keeps AWS's
 * default allow-all egress unless a rule below gives it.
 */
export function clusterSecurityGroups(d: ClusterDeps, args: ClusterSecurityGroupsArgs) {
  const group = (name: string, description: string) =>
    new d.aws.ec2.SecurityGroup(name, {
      vpcId: args.vpcId,
      description,
      revokeRulesOnDelete: true,
    });
  const alb = group("DataPlaneAlbSg", "Workcell data-plane load balancer: HTTPS from clients");
  const nodes = group(
    "NodesSg",
    "Workcell agent-host nodes: data plane from the load balancer only",
  );
  const efs = group("SharedFsSg", "Workcell shared filesystem: NFS from the nodes only");

  new d.aws.vpc.SecurityGroupIngressRule("DataPlaneAlbHttpsIn", {
    securityGroupId: alb.id,
    description: "HTTPS from data-plane clients",
    ipProtocol: "tcp",
    fromPort: 443,
    toPort: 443,
    cidrIpv4: args.albClientCidr,
  });
  new d.aws.vpc.SecurityGroupEgressRule("DataPlaneAlbToNodes", {
    securityGroupId: alb.id,
    description: "to the nodes' data plane",
    ipProtocol: "tcp",
    fromPort: DATA_PLANE_PORT,
    toPort: DATA_PLANE_PORT,
    referencedSecurityGroupId: nodes.id,
  });
  new d.aws.vpc.SecurityGroupIngressRule("NodesDataPlaneIn", {
    securityGroupId: nodes.id,
    description: "data plane from the load balancer",
    ipProtocol: "tcp",
    fromPort: DATA_PLANE_PORT,
    toPort: DATA_PLANE_PORT,
    referencedSecurityGroupId: alb.id,
  });
  new d.aws.vpc.SecurityGroupEgressRule("NodesOut", {
    securityGroupId: nodes.id,
    description: "Postgres, SQS, S3, package mirrors, model servers",
    ipProtocol: "-1",
    cidrIpv4: "0.0.0.0/0",
  });
  new d.aws.vpc.SecurityGroupIngressRule("SharedFsNfsIn", {
    securityGroupId: efs.id,
    description: "NFS from the nodes",
    ipProtocol: "tcp",
    fromPort: NFS_PORT,
    toPort: NFS_PORT,
    referencedSecurityGroupId: nodes.id,
  });
  return { alb, nodes, efs };
}
