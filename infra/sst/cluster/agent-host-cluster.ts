import type { AgentHostRelease } from "../agent-host-release.ts";
import type { DeploySettings } from "../deploy-settings.ts";
import { renderNodeUserData } from "../node-user-data.ts";
import type { ClusterDeps, Input, Output } from "./cluster-deps.ts";
import { clusterSecurityGroups } from "./cluster-security-groups.ts";
import { dataPlaneAlb } from "./data-plane-alb.ts";
import { nodeGroup } from "./node-group.ts";
import { nodeRole } from "./node-role.ts";
import { sharedFilesystem } from "./shared-filesystem.ts";

export type ClusterVpc = {
  id: Input<string>;
  cidrBlock: Input<string>;
  privateSubnets: Output<string[]>;
  publicSubnets: Output<string[]>;
  /** The VPC's availability zones, one private and one public subnet each. */
  zoneCount: number;
};

export type AgentHostClusterArgs = {
  region: Input<string>;
  /** Prefix of the env file's SSM parameter name, e.g. /workcell/prod. */
  parameterPrefix: string;
  vpc: ClusterVpc;
  runQueueArn: Input<string>;
  runDlqArn: Input<string>;
  attachmentsBucketArn: Input<string>;
  releaseBucket: { name: Input<string>; arn: Input<string> };
  release: AgentHostRelease;
  /** The env file every node gets (renderAgentHostEnv): secret, stored as a SecureString. */
  envFile: Output<string>;
  /**
   * Secrets brokering (decision 0164): the KMS key the nodes open secrets with, and the
   * deployment CA (checked PEMs; the key is stored as a SecureString, written 0600).
   */
  secrets: { kmsKeyArn: Input<string>; caCertPem: Input<string>; caKeyPem: Output<string> };
  settings: Pick<
    DeploySettings,
    | "WORKCELL_DATA_PLANE_URL"
    | "WORKCELL_DATA_PLANE_HOSTED_ZONE_ID"
    | "WORKCELL_DATA_PLANE_CERTIFICATE_ARN"
    | "WORKCELL_DATA_PLANE_SCHEME"
    | "WORKCELL_NODE_INSTANCE_TYPE"
    | "WORKCELL_NODE_COUNT"
    | "WORKCELL_NODE_MAX_COUNT"
    | "WORKCELL_NODE_VOLUME_GB"
    | "WORKCELL_NODE_DRAIN_MINUTES"
  >;
};

/**
 * Everything a deployment's agent-host nodes need besides the control plane: the shared
 * filesystem, the release and env file they boot from, their role, the data plane's load
 * balancer and the Auto Scaling group with its drain hook (docs/decisions/0107).
 */
export function agentHostCluster(d: ClusterDeps, args: AgentHostClusterArgs) {
  const s = args.settings;
  const internal = s.WORKCELL_DATA_PLANE_SCHEME === "internal";
  const groups = clusterSecurityGroups(d, {
    vpcId: args.vpc.id,
    albClientCidr: internal ? args.vpc.cidrBlock : "0.0.0.0/0",
  });
  const fs = sharedFilesystem(d, {
    subnetIds: args.vpc.privateSubnets,
    zoneCount: args.vpc.zoneCount,
    securityGroupId: groups.efs.id,
  });
  const releaseObject = new d.aws.s3.BucketObjectv2("AgentHostRelease", {
    bucket: args.releaseBucket.name,
    key: args.release.key,
    source: new d.pulumi.asset.FileAsset(args.release.file),
    contentType: "application/gzip",
  });
  const envParameter = new d.aws.ssm.Parameter("AgentHostEnv", {
    name: `${args.parameterPrefix}/agent-host.env`,
    description:
      "Workcell: /etc/workcell/agent-host.env of every node (NODE_ID appended on the node)",
    type: "SecureString",
    value: d.pulumi.secret(args.envFile),
  });
  const secretsCaCert = new d.aws.ssm.Parameter("SecretsCaCert", {
    name: `${args.parameterPrefix}/secrets-ca-cert.pem`,
    description: "Workcell: the deployment CA's certificate (TLS towards hosts secrets bind)",
    type: "String",
    value: args.secrets.caCertPem,
  });
  const secretsCaKey = new d.aws.ssm.Parameter("SecretsCaKey", {
    name: `${args.parameterPrefix}/secrets-ca-key.pem`,
    description: "Workcell: the deployment CA's private key (nodes only)",
    type: "SecureString",
    value: d.pulumi.secret(args.secrets.caKeyPem),
  });
  const role = nodeRole(d, {
    runQueueArn: args.runQueueArn,
    runDlqArn: args.runDlqArn,
    attachmentsBucketArn: args.attachmentsBucketArn,
    releaseObjectArn: d.pulumi.interpolate`${args.releaseBucket.arn}/${releaseObject.key}`,
    envParameterArn: envParameter.arn,
    secretsKeyArn: args.secrets.kmsKeyArn,
    secretsCaCertParameterArn: secretsCaCert.arn,
    secretsCaKeyParameterArn: secretsCaKey.arn,
  });
  const alb = dataPlaneAlb(d, {
    vpcId: args.vpc.id,
    internal,
    subnetIds: internal ? args.vpc.privateSubnets : args.vpc.publicSubnets,
    securityGroupId: groups.alb.id,
    certificateArn: s.WORKCELL_DATA_PLANE_CERTIFICATE_ARN,
    ...(s.WORKCELL_DATA_PLANE_HOSTED_ZONE_ID === undefined
      ? {}
      : {
          dns: {
            zoneId: s.WORKCELL_DATA_PLANE_HOSTED_ZONE_ID,
            hostName: new URL(s.WORKCELL_DATA_PLANE_URL).hostname,
          },
        }),
  });
  const userData = d.pulumi
    .output({
      region: args.region,
      releaseBucket: releaseObject.bucket,
      releaseKey: releaseObject.key,
      fileSystemId: fs.fileSystem.id,
      envParameterName: envParameter.name,
      secretsCaCertParameterName: secretsCaCert.name,
      secretsCaKeyParameterName: secretsCaKey.name,
    })
    .apply((names) => renderNodeUserData({ ...names, releaseSha256: args.release.sha256 }));
  const nodes = nodeGroup(d, {
    instanceType: s.WORKCELL_NODE_INSTANCE_TYPE,
    nodeCount: s.WORKCELL_NODE_COUNT,
    maxCount: s.WORKCELL_NODE_MAX_COUNT ?? s.WORKCELL_NODE_COUNT + 1,
    volumeGb: s.WORKCELL_NODE_VOLUME_GB,
    drainMinutes: s.WORKCELL_NODE_DRAIN_MINUTES,
    subnetIds: args.vpc.privateSubnets,
    securityGroupId: groups.nodes.id,
    instanceProfileArn: role.profile.arn,
    targetGroupArn: alb.targetGroup.arn,
    userData,
    after: fs.mountTargets,
  });
  return { groups, fs, releaseObject, envParameter, secretsCaCert, secretsCaKey, role, alb, nodes };
}
