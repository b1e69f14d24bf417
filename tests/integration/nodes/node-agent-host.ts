import type Docker from "dockerode";
import { generateKeyPair } from "jose";
import { type AgentHost, startAgentHost } from "../../../agent-host/agent-host.ts";
import type { NodeEgressConfig } from "../../../agent-host/egress/start-node-egress.ts";
import { modelConfigSchema } from "../../../agent-host/runs/agent/model-config.ts";
import {
  detectSandboxTiers,
  type SandboxTierSet,
} from "../../../agent-host/sandbox/detect-sandbox-tiers.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import type {
  SandboxConfig,
  SandboxConfigInput,
} from "../../../agent-host/sandbox/sandbox-config.ts";
import { postgresListen } from "../../../shared/listen/postgres-listen.ts";
import { freePort } from "../../setup/free-port.ts";
import { freshBucket, s3Client } from "../../support/aws.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import { busyboxRuntimeDir } from "../../support/process-tier.ts";
import type { FunctionsHarness } from "../functions/support/functions-harness.ts";
import { silentLogger, testConfig, uniqueNodeId } from "../sandbox/sandbox-fixture.ts";

/**
 * A real agent-host on the functions harness's database, queue and data root, as the node
 * tests start it: the shell model, a fresh bucket, its own capability key, a fast node
 * heartbeat (200 ms) so the admin routes see it at once, and the tiers the test detected.
 */
export async function startNodeAgentHost(
  h: FunctionsHarness,
  p: {
    nodeId: string;
    config: SandboxConfig;
    sandboxTiers: SandboxTierSet;
    /** Default 200 ms. */
    heartbeatMs?: number;
    /** The node's egress settings; default none (no run gets network). */
    egress?: NodeEgressConfig;
  },
): Promise<AgentHost> {
  const { publicKey } = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
  const s3 = s3Client();
  return startAgentHost({
    db: h.db,
    listen: postgresListen(h.database.sql),
    sqs: h.sqs,
    runQueueUrl: h.queueUrl,
    s3,
    attachmentsBucket: await freshBucket(s3),
    dataRoot: h.dataRoot,
    nodeId: p.nodeId,
    capabilityPublicKeys: [publicKey],
    sandboxTiers: p.sandboxTiers,
    sandboxConfig: p.config,
    modelConfig: modelConfigSchema.parse({ kind: "shell" }),
    dataPlane: { port: await freePort(), hostname: "127.0.0.1" },
    nodeHeartbeatIntervalMs: p.heartbeatMs ?? 200,
    logger: silentLogger,
    ...(p.egress === undefined ? {} : { egress: p.egress }),
  });
}

/** An agent-host of startContainerNode and how to end it. */
export interface ContainerNode {
  readonly host: AgentHost;
  readonly nodeId: string;
  /** Stops the agent-host and removes every container labelled with its node id. */
  stop(): Promise<void>;
}

/**
 * The node suites' usual agent-host: a fresh node id (or the test's own, when it planted
 * something under that id first), short drain and kill bounds, and the tiers detected over
 * the busybox Runtime Assets with `docker` (the container tier).
 */
export async function startContainerNode(
  h: FunctionsHarness,
  p: {
    docker: Docker;
    image: string;
    /** The engine as this node reaches it (a proxy a test controls); default `docker`. */
    nodeDocker?: Docker;
    config?: Partial<SandboxConfigInput>;
    heartbeatMs?: number;
    nodeId?: string;
  },
): Promise<ContainerNode> {
  const nodeId = p.nodeId ?? uniqueNodeId();
  const removeContainers = () => removeContainersLabelled(p.docker, LABEL.nodeId, nodeId);
  const config = testConfig(p.image, { drainTimeoutMs: 500, killGraceMs: 500, ...p.config });
  let host: AgentHost;
  try {
    host = await startNodeAgentHost(h, {
      nodeId,
      config,
      sandboxTiers: await detectSandboxTiers({
        logger: silentLogger,
        dataRoot: h.dataRoot,
        nodeId: nodeId,
        config,
        runtimeDir: await busyboxRuntimeDir(),
        docker: p.nodeDocker ?? p.docker,
      }),
      ...(p.heartbeatMs === undefined ? {} : { heartbeatMs: p.heartbeatMs }),
    });
  } catch (error) {
    await removeContainers();
    throw error;
  }
  return {
    host,
    nodeId,
    stop: async () => {
      await host.stop();
      await removeContainers();
    },
  };
}
