import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type * as Aws from "@pulumi/aws";
import type * as Pulumi from "@pulumi/pulumi";
import {
  type AgentHostClusterArgs,
  agentHostCluster,
} from "../../../../infra/sst/cluster/agent-host-cluster.ts";
import { drainTrigger } from "../../../../infra/sst/cluster/drain-trigger.ts";
import { secretsKey } from "../../../../infra/sst/cluster/secrets-key.ts";
import type { DeploySettings } from "../../../../infra/sst/deploy-settings.ts";

// Evaluates the node group's Pulumi program offline: the providers' own npm SDKs (the ones
// SST's platform depends on, installed by infra/sst/ensure-platform.sh from the npm
// registry) under Pulumi's mocks (pulumi.runtime.setMocks), which stand in for the engine
// and record every resource registration with its resolved inputs. No provider plugin runs
// and nothing reaches AWS; what is checked is the graph the program declares.

const repo = new URL("../../../../", import.meta.url).pathname;
const platformModules = join(repo, ".sst/platform/node_modules");

export type Registered = { type: string; name: string; inputs: Record<string, unknown> };

export type Evaluated = {
  resources: Registered[];
  /** The arguments of every AMI lookup (the image the nodes boot). */
  amiQueries: unknown[];
  /** Every resource of a type, by its logical name. */
  ofType: (type: string) => Registered[];
  one: (type: string, name: string) => Registered;
  cluster: ReturnType<typeof agentHostCluster>;
  secrets: ReturnType<typeof secretsKey>;
  pulumi: typeof Pulumi;
  /** Resolves an output under the mocks (its value and whether it is secret). */
  settle: <T>(output: Pulumi.Output<T>) => Promise<{ value: T; secret: boolean }>;
};

export const TEST_DB_PASSWORD = "Sup3r-s3cret-db-pa55word";
export const TEST_REGION = "eu-west-1";
export const TEST_ACCOUNT = "123456789012";
export const VPC_CIDR = "10.0.0.0/16";
export const PRIVATE_SUBNETS = ["subnet-priv-a", "subnet-priv-b"];
export const PUBLIC_SUBNETS = ["subnet-pub-a", "subnet-pub-b"];
export const RUN_QUEUE_ARN = `arn:aws:sqs:${TEST_REGION}:${TEST_ACCOUNT}:workcell-test-Runs`;
export const RUN_DLQ_ARN = `arn:aws:sqs:${TEST_REGION}:${TEST_ACCOUNT}:workcell-test-RunsDlq`;
export const ATTACHMENTS_ARN = "arn:aws:s3:::workcell-test-attachments";
export const RELEASES_ARN = "arn:aws:s3:::workcell-test-releases";
/** The deployment CA's private key as the operator stored it (must reach one SecureString only). */
export const TEST_CA_KEY_PEM =
  "-----BEGIN PRIVATE KEY-----\nTESTCAKEYMATERIALnotarealkey0123456789\n-----END PRIVATE KEY-----\n";
export const TEST_CA_CERT_PEM =
  "-----BEGIN CERTIFICATE-----\nTESTCACERT0123456789\n-----END CERTIFICATE-----\n";
export const DRAINER_ARN = `arn:aws:lambda:${TEST_REGION}:${TEST_ACCOUNT}:function:drainer`;

/** The ARN the mocks give a resource: deterministic, so tests can name it. */
export const mockArn = (type: string, name: string) =>
  `arn:aws:mock:${TEST_REGION}:${TEST_ACCOUNT}:${type}/${name}`;

export const baseSettings: AgentHostClusterArgs["settings"] = {
  WORKCELL_DATA_PLANE_URL: "https://dp.workcell.example.com",
  WORKCELL_DATA_PLANE_HOSTED_ZONE_ID: undefined,
  WORKCELL_DATA_PLANE_CERTIFICATE_ARN: `arn:aws:acm:${TEST_REGION}:${TEST_ACCOUNT}:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b`,
  WORKCELL_DATA_PLANE_SCHEME: "internet-facing",
  WORKCELL_NODE_INSTANCE_TYPE: "m7i.large",
  WORKCELL_NODE_COUNT: 2,
  WORKCELL_NODE_MAX_COUNT: undefined,
  WORKCELL_NODE_VOLUME_GB: 100,
  WORKCELL_NODE_DRAIN_MINUTES: 10,
} satisfies Partial<DeploySettings>;

async function loadPulumi(): Promise<typeof Pulumi> {
  execFileSync("bash", [join(repo, "infra/sst/ensure-platform.sh")], { stdio: "inherit" });
  return (await import(join(platformModules, "@pulumi/pulumi/index.js"))) as typeof Pulumi;
}

/** Runs the cluster (and its drain trigger) once under the mocks; one per test file. */
export async function evaluateCluster(
  settings: AgentHostClusterArgs["settings"] = baseSettings,
): Promise<Evaluated> {
  const pulumi = await loadPulumi();
  const resources: Registered[] = [];
  const amiQueries: unknown[] = [];
  await pulumi.runtime.setMocks(
    {
      newResource(args) {
        const inputs = args.inputs as Record<string, unknown>;
        resources.push({ type: args.type, name: args.name, inputs });
        const state: Record<string, unknown> = {
          ...inputs,
          arn: mockArn(args.type, args.name),
          name: inputs.name ?? `${args.name}-name`,
        };
        if (args.type === "aws:lb/loadBalancer:LoadBalancer") {
          state.dnsName = "dp-alb.elb.amazonaws.com";
          state.zoneId = "ZALBZONE";
        }
        if (args.type === "aws:ec2/launchTemplate:LaunchTemplate") state.latestVersion = 1;
        if (args.type === "aws:efs/fileSystem:FileSystem") return { id: "fs-0123abcd", state };
        return { id: `${args.name}-id`, state };
      },
      call(args) {
        if (args.token === "aws:ec2/getAmi:getAmi") {
          amiQueries.push(args.inputs);
          return { id: "ami-0debian12", imageId: "ami-0debian12" };
        }
        throw new Error(`unexpected provider call ${args.token}`);
      },
    },
    "workcell",
    "test",
    false,
  );
  // Loaded after setMocks so its resources register with the mock monitor.
  const aws = (await import(join(platformModules, "@pulumi/aws/index.js"))) as typeof Aws;
  const releaseDir = mkdtempSync(join(tmpdir(), "graph-release-"));
  const sha256 = "b".repeat(64);
  const file = join(releaseDir, `workcell-agent-host-${sha256}.tar.gz`);
  writeFileSync(file, "release bytes");
  const envFile = pulumi.secret(
    `DATABASE_URL='postgres://workcell:${TEST_DB_PASSWORD}@db.internal:5432/workcell'\n`,
  );
  const deps = { aws, pulumi };
  const secrets = secretsKey(deps, { aliasName: "alias/workcell-test-secrets" });
  const cluster = agentHostCluster(deps, {
    region: TEST_REGION,
    parameterPrefix: "/workcell/test",
    vpc: {
      id: "vpc-0test",
      cidrBlock: VPC_CIDR,
      privateSubnets: pulumi.output(PRIVATE_SUBNETS),
      publicSubnets: pulumi.output(PUBLIC_SUBNETS),
      zoneCount: PRIVATE_SUBNETS.length,
    },
    runQueueArn: RUN_QUEUE_ARN,
    runDlqArn: RUN_DLQ_ARN,
    attachmentsBucketArn: ATTACHMENTS_ARN,
    releaseBucket: { name: "workcell-test-releases", arn: RELEASES_ARN },
    release: { file, sha256, key: `agent-host/workcell-agent-host-${sha256}.tar.gz` },
    envFile,
    secrets: {
      kmsKeyArn: secrets.key.arn,
      caCertPem: TEST_CA_CERT_PEM,
      caKeyPem: pulumi.secret(TEST_CA_KEY_PEM),
    },
    settings,
  });
  drainTrigger(deps, {
    groupName: cluster.nodes.group.name,
    drainerArn: DRAINER_ARN,
    drainerName: "drainer",
  });
  // Every registration (and the applies feeding them) is done when the runtime disconnects.
  await pulumi.runtime.disconnect();
  const ofType = (type: string) => resources.filter((r) => r.type === type);
  return {
    resources,
    amiQueries,
    ofType,
    one(type, name) {
      const found = resources.find((r) => r.type === type && r.name === name);
      if (found === undefined) throw new Error(`no ${type} named ${name} was registered`);
      return found;
    },
    cluster,
    secrets,
    pulumi,
    settle: (output) =>
      new Promise((resolve, reject) => {
        const internal = output as unknown as {
          promise(): Promise<unknown>;
          isSecret: Promise<boolean>;
        };
        Promise.all([internal.promise(), internal.isSecret]).then(
          ([value, secret]) => resolve({ value: value as never, secret }),
          reject,
        );
      }),
  };
}
