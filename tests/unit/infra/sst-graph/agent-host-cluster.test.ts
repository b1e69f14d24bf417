import { beforeAll, describe, expect, test } from "vitest";
import { NODE_QUEUE_ACTIONS } from "../../../../infra/sst/cluster/node-role.ts";
import { SECRETS_KEY_ACTIONS } from "../../../../infra/sst/cluster/secrets-key.ts";
import { EFS_MOUNT_OPTIONS } from "../../../../infra/sst/node-user-data.ts";
import {
  ATTACHMENTS_ARN,
  DRAINER_ARN,
  type Evaluated,
  evaluateCluster,
  mockArn,
  PRIVATE_SUBNETS,
  PUBLIC_SUBNETS,
  RELEASES_ARN,
  type Registered,
  RUN_DLQ_ARN,
  RUN_QUEUE_ARN,
  TEST_CA_CERT_PEM,
  TEST_CA_KEY_PEM,
  TEST_DB_PASSWORD,
} from "./evaluate-cluster.ts";

// The node group's resource graph as `sst deploy` would declare it (internet-facing data
// plane, the default settings), evaluated offline under Pulumi's mocks.

const SG = "aws:ec2/securityGroup:SecurityGroup";
const INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule";
const EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule";
const SECRET_SIG = "4dabf18193072939515e22adb298388d";

let e: Evaluated;
beforeAll(async () => {
  e = await evaluateCluster();
}, 300_000);

const groupId = (name: string) => `${name}-id`;
const rulesOf = (type: string, group: string) =>
  e.ofType(type).filter((r) => r.inputs.securityGroupId === groupId(group));

describe("security groups", () => {
  test("no group has inline rules; every rule is one of the five declared", () => {
    for (const sg of e.ofType(SG)) {
      expect(sg.inputs.ingress).toBeUndefined();
      expect(sg.inputs.egress).toBeUndefined();
    }
    expect(
      e
        .ofType(SG)
        .map((r) => r.name)
        .sort(),
    ).toEqual(["DataPlaneAlbSg", "NodesSg", "SharedFsSg"]);
    expect(e.ofType(INGRESS).length + e.ofType(EGRESS).length).toBe(5);
    expect(e.ofType("aws:ec2/securityGroupRule:SecurityGroupRule")).toEqual([]);
  });

  test("nodes admit the data plane from the load balancer's group and nothing else", () => {
    const inbound = rulesOf(INGRESS, "NodesSg");
    expect(inbound.map((r) => r.inputs)).toEqual([
      expect.objectContaining({
        ipProtocol: "tcp",
        fromPort: 8081,
        toPort: 8081,
        referencedSecurityGroupId: groupId("DataPlaneAlbSg"),
      }),
    ]);
    for (const rule of e
      .ofType(INGRESS)
      .filter((r) => r.inputs.securityGroupId !== groupId("DataPlaneAlbSg"))) {
      expect(rule.inputs.cidrIpv4).toBeUndefined();
      expect(rule.inputs.cidrIpv6).toBeUndefined();
      expect(rule.inputs.prefixListId).toBeUndefined();
    }
  });

  test("only the internet-facing load balancer admits 0.0.0.0/0, on 443 only", () => {
    const open = e.ofType(INGRESS).filter((r) => r.inputs.cidrIpv4 === "0.0.0.0/0");
    expect(open.map((r) => [r.inputs.securityGroupId, r.inputs.fromPort, r.inputs.toPort])).toEqual(
      [[groupId("DataPlaneAlbSg"), 443, 443]],
    );
    expect(rulesOf(EGRESS, "DataPlaneAlbSg").map((r) => r.inputs)).toEqual([
      expect.objectContaining({
        fromPort: 8081,
        toPort: 8081,
        referencedSecurityGroupId: groupId("NodesSg"),
      }),
    ]);
  });
});

describe("shared filesystem", () => {
  test("is encrypted, backed up, with one mount target per private subnet in its own group", () => {
    const fs = e.one("aws:efs/fileSystem:FileSystem", "SharedFs");
    expect(fs.inputs.encrypted).toBe(true);
    expect(
      e.one("aws:efs/backupPolicy:BackupPolicy", "SharedFsBackup").inputs.backupPolicy,
    ).toEqual({
      status: "ENABLED",
    });
    const targets = e.ofType("aws:efs/mountTarget:MountTarget");
    expect(targets.map((t) => t.inputs.subnetId).sort()).toEqual([...PRIVATE_SUBNETS].sort());
    for (const t of targets) expect(t.inputs.securityGroups).toEqual([groupId("SharedFsSg")]);
  });

  test("is reachable only from the nodes, on NFS", () => {
    expect(rulesOf(INGRESS, "SharedFsSg").map((r) => r.inputs)).toEqual([
      expect.objectContaining({
        ipProtocol: "tcp",
        fromPort: 2049,
        toPort: 2049,
        referencedSecurityGroupId: groupId("NodesSg"),
      }),
    ]);
    expect(rulesOf(EGRESS, "SharedFsSg")).toEqual([]);
    expect(e.ofType("aws:efs/fileSystemPolicy:FileSystemPolicy")).toEqual([]);
    expect(e.ofType("aws:efs/accessPoint:AccessPoint")).toEqual([]);
  });
});

type Statement = { Effect: string; Action: string[]; Resource: string[] };

describe("node role", () => {
  test("can be assumed by EC2 only and has no policy besides its one inline policy", () => {
    const role = e.one("aws:iam/role:Role", "NodeRole");
    expect(JSON.parse(role.inputs.assumeRolePolicy as string).Statement).toEqual([
      { Effect: "Allow", Principal: { Service: "ec2.amazonaws.com" }, Action: "sts:AssumeRole" },
    ]);
    expect(role.inputs.managedPolicyArns).toBeUndefined();
    expect(role.inputs.inlinePolicies).toBeUndefined();
    expect(e.ofType("aws:iam/rolePolicyAttachment:RolePolicyAttachment")).toEqual([]);
    expect(e.ofType("aws:iam/policy:Policy")).toEqual([]);
    expect(e.ofType("aws:iam/rolePolicy:RolePolicy").map((r) => r.name)).toEqual([
      "NodeRolePolicy",
    ]);
  });

  test("allows exactly the nodes' actions on exactly their resources", () => {
    const policy = JSON.parse(
      e.one("aws:iam/rolePolicy:RolePolicy", "NodeRolePolicy").inputs.policy as string,
    );
    const pairs = (policy.Statement as Statement[]).flatMap((s) => {
      expect(s.Effect).toBe("Allow");
      return s.Action.flatMap((a) => s.Resource.map((r) => `${a} ${r}`));
    });
    const release = `${RELEASES_ARN}/agent-host/workcell-agent-host-${"b".repeat(64)}.tar.gz`;
    const envParameter =
      "arn:aws:mock:eu-west-1:123456789012:aws:ssm/parameter:Parameter/AgentHostEnv";
    expect(pairs.sort()).toEqual(
      [
        ...NODE_QUEUE_ACTIONS.flatMap((a) => [`${a} ${RUN_QUEUE_ARN}`, `${a} ${RUN_DLQ_ARN}`]),
        `s3:GetObject ${ATTACHMENTS_ARN}/*`,
        `s3:ListBucket ${ATTACHMENTS_ARN}`,
        `s3:GetObject ${release}`,
        `ssm:GetParameter ${envParameter}`,
        // Secrets (decision 0164): open only, on the one key; the CA's two parameters.
        `kms:Decrypt ${mockArn("aws:kms/key:Key", "SecretsKey")}`,
        `ssm:GetParameter ${mockArn("aws:ssm/parameter:Parameter", "SecretsCaCert")}`,
        `ssm:GetParameter ${mockArn("aws:ssm/parameter:Parameter", "SecretsCaKey")}`,
      ].sort(),
    );
    expect([...NODE_QUEUE_ACTIONS].sort()).toEqual([
      "sqs:ChangeMessageVisibility",
      "sqs:DeleteMessage",
      "sqs:GetQueueAttributes",
      "sqs:ReceiveMessage",
      "sqs:SendMessage",
    ]);
    // No wildcard action, and no resource wider than the attachments' objects.
    for (const s of policy.Statement as Statement[]) {
      for (const action of s.Action) expect(action).not.toContain("*");
      for (const resource of s.Resource)
        expect(resource === "*" || resource.endsWith(":*")).toBe(false);
    }
  });
});

describe("data-plane load balancer", () => {
  test("is an internet-facing HTTPS ALB in the public subnets with the settings' certificate", () => {
    const alb = e.one("aws:lb/loadBalancer:LoadBalancer", "DataPlaneAlb");
    expect(alb.inputs).toMatchObject({
      loadBalancerType: "application",
      internal: false,
      subnets: PUBLIC_SUBNETS,
      securityGroups: [groupId("DataPlaneAlbSg")],
      dropInvalidHeaderFields: true,
    });
    const listeners = e.ofType("aws:lb/listener:Listener");
    expect(listeners.map((l) => [l.inputs.protocol, l.inputs.port])).toEqual([["HTTPS", 443]]);
    expect(listeners[0]?.inputs.certificateArn).toMatch(
      /^arn:aws:acm:eu-west-1:123456789012:certificate\//,
    );
    expect(listeners[0]?.inputs.sslPolicy).toMatch(/^ELBSecurityPolicy-TLS13-/);
  });

  test("without a hosted zone no DNS record is made (the operator points the name)", () => {
    expect(e.ofType("aws:route53/record:Record")).toEqual([]);
  });

  test("health-checks each node's /readyz on the data-plane port", () => {
    const tg = e.one("aws:lb/targetGroup:TargetGroup", "DataPlaneTargets");
    expect(tg.inputs).toMatchObject({ port: 8081, protocol: "HTTP", targetType: "instance" });
    expect(tg.inputs.healthCheck).toMatchObject({
      path: "/readyz",
      matcher: "200",
      port: "traffic-port",
    });
  });
});

describe("node group", () => {
  test("Debian 12 nodes, IMDSv2 with one hop, encrypted root, in the private subnets behind the ALB", () => {
    const lt = e.one("aws:ec2/launchTemplate:LaunchTemplate", "NodeTemplate");
    expect(lt.inputs).toMatchObject({
      imageId: "ami-0debian12",
      instanceType: "m7i.large",
      vpcSecurityGroupIds: [groupId("NodesSg")],
      metadataOptions: { httpTokens: "required", httpPutResponseHopLimit: 1 },
    });
    expect(lt.inputs.blockDeviceMappings).toEqual([
      { deviceName: "/dev/xvda", ebs: { encrypted: "true", volumeSize: 100, volumeType: "gp3" } },
    ]);
    expect(lt.inputs.networkInterfaces).toBeUndefined();
    const asg = e.one("aws:autoscaling/group:Group", "Nodes");
    expect(asg.inputs).toMatchObject({
      vpcZoneIdentifiers: PRIVATE_SUBNETS,
      minSize: 2,
      desiredCapacity: 2,
      maxSize: 3,
      healthCheckType: "ELB",
      launchTemplate: { id: "NodeTemplate-id" },
    });
    expect(asg.inputs.targetGroupArns).toEqual([
      "arn:aws:mock:eu-west-1:123456789012:aws:lb/targetGroup:TargetGroup/DataPlaneTargets",
    ]);
  });

  test("user data installs the checksum-named release and mounts the shared filesystem", () => {
    const script = userData(e.one("aws:ec2/launchTemplate:LaunchTemplate", "NodeTemplate"));
    expect(script).toContain(`release_sha256='${"b".repeat(64)}'`);
    expect(script).toContain(`release_bucket='workcell-test-releases'`);
    expect(script).toContain("file_system='fs-0123abcd'");
    expect(script).toContain("env_parameter='/workcell/test/agent-host.env'");
    expect(script).toContain(`nfs4 ${EFS_MOUNT_OPTIONS}`);
  });

  test("a terminating node waits on a bounded hook that the drainer's rule, and only it, receives", () => {
    const hooks = e.ofType("aws:autoscaling/lifecycleHook:LifecycleHook");
    expect(hooks.map((h) => h.inputs)).toEqual([
      {
        autoscalingGroupName: "Nodes-name",
        lifecycleTransition: "autoscaling:EC2_INSTANCE_TERMINATING",
        heartbeatTimeout: 10 * 60 + 120,
        defaultResult: "CONTINUE",
      },
    ]);
    const rule = e.one("aws:cloudwatch/eventRule:EventRule", "NodeDrainRule");
    expect(JSON.parse(rule.inputs.eventPattern as string)).toEqual({
      source: ["aws.autoscaling"],
      "detail-type": ["EC2 Instance-terminate Lifecycle Action"],
      detail: {
        AutoScalingGroupName: ["Nodes-name"],
        LifecycleTransition: ["autoscaling:EC2_INSTANCE_TERMINATING"],
      },
    });
    expect(e.one("aws:cloudwatch/eventTarget:EventTarget", "NodeDrainTarget").inputs.arn).toBe(
      DRAINER_ARN,
    );
    expect(e.one("aws:lambda/permission:Permission", "NodeDrainInvoke").inputs).toMatchObject({
      principal: "events.amazonaws.com",
      sourceArn:
        "arn:aws:mock:eu-west-1:123456789012:aws:cloudwatch/eventRule:EventRule/NodeDrainRule",
    });
  });
});

function userData(lt: Registered): string {
  return Buffer.from(lt.inputs.userData as string, "base64").toString("utf8");
}

describe("secrets", () => {
  test("the env file reaches one SecureString parameter, as a secret, and nothing else", async () => {
    const parameter = e.one("aws:ssm/parameter:Parameter", "AgentHostEnv");
    expect(parameter.inputs.type).toBe("SecureString");
    const value = parameter.inputs.value as Record<string, unknown>;
    expect(value[SECRET_SIG]).toBeDefined();
    expect(String(value.value)).toContain(TEST_DB_PASSWORD);
    const { secret } = await e.settle(e.cluster.envParameter.value);
    expect(secret).toBe(true);

    const elsewhere = e.resources.filter((r) => r !== parameter);
    expect(elsewhere.length).toBeGreaterThan(20);
    for (const r of elsewhere) expect(JSON.stringify(r.inputs)).not.toContain(TEST_DB_PASSWORD);
    const script = userData(e.one("aws:ec2/launchTemplate:LaunchTemplate", "NodeTemplate"));
    expect(script).not.toContain(TEST_DB_PASSWORD);
    expect(script).not.toContain("DATABASE_URL");
  });

  test("the deployment CA's key reaches one SecureString parameter, as a secret; its certificate a plain one", async () => {
    const key = e.one("aws:ssm/parameter:Parameter", "SecretsCaKey");
    expect(key.inputs).toMatchObject({
      name: "/workcell/test/secrets-ca-key.pem",
      type: "SecureString",
    });
    expect((key.inputs.value as Record<string, unknown>)[SECRET_SIG]).toBeDefined();
    expect((await e.settle(e.cluster.secretsCaKey.value)).secret).toBe(true);
    const cert = e.one("aws:ssm/parameter:Parameter", "SecretsCaCert");
    expect(cert.inputs).toMatchObject({
      name: "/workcell/test/secrets-ca-cert.pem",
      type: "String",
    });
    // (The provider marks every parameter value secret; the certificate is public anyway.)
    expect((cert.inputs.value as Record<string, unknown>).value).toBe(TEST_CA_CERT_PEM);
    const keyBody = TEST_CA_KEY_PEM.split("\n")[1] ?? "";
    for (const r of e.resources.filter((r) => r !== key)) {
      expect(JSON.stringify(r.inputs)).not.toContain(keyBody);
    }
    const script = userData(e.one("aws:ec2/launchTemplate:LaunchTemplate", "NodeTemplate"));
    expect(script).toContain("ca_key_parameter='/workcell/test/secrets-ca-key.pem'");
    expect(script).not.toContain(keyBody);
  });

  test("the secrets key is a symmetric KMS key with yearly rotation, named by its alias; the API seals, nodes open", () => {
    expect(e.one("aws:kms/key:Key", "SecretsKey").inputs).toMatchObject({
      keyUsage: "ENCRYPT_DECRYPT",
      customerMasterKeySpec: "SYMMETRIC_DEFAULT",
      enableKeyRotation: true,
      deletionWindowInDays: 30,
    });
    expect(e.one("aws:kms/alias:Alias", "SecretsKeyAlias").inputs).toMatchObject({
      name: "alias/workcell-test-secrets",
      targetKeyId: mockArn("aws:kms/key:Key", "SecretsKey"),
    });
    expect(SECRETS_KEY_ACTIONS).toEqual({ api: ["kms:Encrypt"], nodes: ["kms:Decrypt"] });
  });
});
