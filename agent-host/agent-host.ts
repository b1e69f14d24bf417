import type { S3Client } from "@aws-sdk/client-s3";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import type { CapabilityPublicKey } from "../shared/capability/capability-keys.ts";
import type { Db } from "../shared/db/client.ts";
import type { CorsOrigins } from "../shared/http/cors-for-origins.ts";
import type { ListenFn } from "../shared/listen/listen-fn.ts";
import { createWorkcellMetrics, type WorkcellMetrics } from "../shared/metrics/workcell-metrics.ts";
import type { Tracing } from "../shared/telemetry/tracing.ts";
import type { WorkdirSubvolumes } from "./checkpoints/subvolumes.ts";
import { createRunWorker } from "./create-run-worker.ts";
import { startNodeDataPlane } from "./data-plane/start-node-data-plane.ts";
import { type NodeEgressConfig, startNodeEgress } from "./egress/start-node-egress.ts";
import { noIsolationSandboxes } from "./no-isolation-sandboxes.ts";
import type { NodeHeartbeat } from "./node/node-heartbeat.ts";
import type { ReadinessCheck } from "./node/node-readiness.ts";
import { startNode } from "./node/start-node.ts";
import type { ModelConfig } from "./runs/agent/model-config.ts";
import type { RunWorker } from "./runs/run-worker.ts";
import type { RuntimeAssetsReport } from "./runtime/runtime-assets.ts";
import type { SandboxTierSet } from "./sandbox/detect-sandbox-tiers.ts";
import { SandboxManager } from "./sandbox/lifecycle/sandbox-manager.ts";
import type { SandboxConfig } from "./sandbox/sandbox-config.ts";
import { type SandboxDriverStatus, sandboxDriverStatus } from "./sandbox/sandbox-driver-status.ts";
import type { AgentHostSkills } from "./skills/agent-host-skills.ts";
import { startWorkspaces } from "./start-workspaces.ts";

export { SANDBOX_OWNER } from "./start-workspaces.ts";

/** Everything one agent-host needs, parsed and connected by its entry (main.ts or the local stack). */
export type AgentHostDeps = {
  /** postgres.js, on a node and in the one-process local mode alike. */
  db: Db;
  /** LISTEN for cancels (postgresListen); without it the heartbeat notices them. */
  listen?: ListenFn;
  sqs: SQSClient;
  runQueueUrl: string;
  deadLetterQueueUrl?: string;
  s3: S3Client;
  attachmentsBucket: string;
  /** users/<uid dirname>/workspace and skills/ live below it (shared by all nodes). */
  dataRoot: string;
  /** WORKDIR_SUBVOLUMES: `off` keeps managed Workdirs plain on btrfs (default `auto`). */
  workdirSubvolumes?: WorkdirSubvolumes;
  nodeId: string;
  capabilityPublicKeys: readonly CapabilityPublicKey[];
  /** The ready sandbox drivers of this node (detectSandboxTiers), with every tier's preflight. */
  sandboxTiers: SandboxTierSet;
  sandboxConfig: SandboxConfig;
  modelConfig: ModelConfig;
  /** The deployment's approval wait (APPROVAL_TIMEOUT_SECONDS); default a day. */
  approvalTimeoutSeconds?: number;
  dataPlane: {
    port: number;
    hostname: string;
    /** Advertised in `nodes`; default from hostname:port. */
    publicUrl?: string;
    /** Browser origins allowed on /dp/v1 (CORS); default none. */
    corsOrigins?: CorsOrigins;
  };
  workerConcurrency?: number;
  /** Between node heartbeats (NODE_HEARTBEAT_SECONDS); the node TTL is sandboxConfig.nodeTtlMs. */
  nodeHeartbeatIntervalMs?: number;
  logger: Logger;
  /** Spans of runs and data-plane requests, from OTEL_* at the entry; default off. */
  tracing?: Tracing;
  /**
   * The process's series (createProcessMetrics; the entry serves them on METRICS_PORT);
   * default: a registry of this agent-host alone.
   */
  metrics?: WorkcellMetrics;
  /** Network egress of runs (decision 0117); absent: no run gets network. */
  egress?: NodeEgressConfig;
};

export type AgentHost = {
  dataPlaneUrl: string;
  skills: AgentHostSkills;
  sandboxDriver: SandboxDriverStatus;
  /** The egress proxy as reported in the runtime report; undefined when not configured. */
  egress: { ready: boolean; detail: string } | undefined;
  /** How this node takes checkpoints (reflink or copy), as reported in the runtime report. */
  checkpoints: { mode: "reflink" | "copy"; detail: string };
  /** The Runtime Assets as verified at start (checksums and probes), once done. */
  runtime: Promise<RuntimeAssetsReport>;
  /** This node's liveness as its heartbeat sees it (for /readyz). */
  heartbeat: NodeHeartbeat;
  stop(): Promise<void>;
};

/**
 * Starts one agent-host (docs/architecture.md §1): the owner of workspace bytes (data plane),
 * skill projections, sandboxes and the run worker on this node. Order matters: builtin
 * skills are registered before anything refreshes a projection, the node (node/start-node.ts)
 * exists before its sandbox manager reconciles, and the worker consumes only once all it
 * needs is up. Stopping runs the other way round: the worker hands back or finishes its
 * runs first, then the node releases its sandboxes and marks itself stopped.
 */
export async function startAgentHost(deps: AgentHostDeps): Promise<AgentHost> {
  const logger = deps.logger.child({ node_id: deps.nodeId });
  const metrics = deps.metrics ?? createWorkcellMetrics(new Registry());
  const stops: Array<() => Promise<void>> = [];
  const starting = new AbortController();
  try {
    const { userWorkspaces, quota, checkpoints, skills } = await startWorkspaces(
      deps,
      logger,
      metrics,
      stops,
      starting.signal,
    );
    let readiness: ReadinessCheck | undefined;
    const server = await startNodeDataPlane(
      deps,
      { userWorkspaces, quota, checkpoints, skills },
      logger,
      metrics,
      () => readiness,
    );
    stops.push(() => server.close());
    const egress =
      deps.egress === undefined
        ? undefined
        : startNodeEgress({ db: deps.db, logger, metrics }, deps.egress);
    if (egress !== undefined) stops.push(() => egress.stop());

    const dataPlaneUrl = deps.dataPlane.publicUrl ?? server.url;
    const sandboxDriver = sandboxDriverStatus(deps.sandboxTiers);
    let worker: RunWorker | undefined;
    const node = await startNode({
      db: deps.db,
      sqs: deps.sqs,
      runQueueUrl: deps.runQueueUrl,
      nodeId: deps.nodeId,
      dataPlaneUrl,
      dataRoot: deps.dataRoot,
      sandboxTiers: deps.sandboxTiers,
      sandboxConfig: deps.sandboxConfig,
      ...(deps.nodeHeartbeatIntervalMs === undefined
        ? {}
        : { heartbeatIntervalMs: deps.nodeHeartbeatIntervalMs }),
      ...(egress === undefined ? {} : { egressStatus: egress.status }),
      checkpointsStatus: checkpoints.report,
      startSandboxes: (signal) => startSandboxManager(deps, sandboxDriver, metrics, logger, signal),
      onTiersRecovered: () => worker?.wake(),
      metrics,
      logger,
      signal: starting.signal,
    });
    stops.push(node.stop);
    readiness = node.readiness;
    const sandboxes = node.manager ?? noIsolationSandboxes(sandboxDriver.detail);
    const parts = {
      node,
      sandboxes,
      egress,
      userWorkspaces,
      quota,
      skills,
      checkpoints: checkpoints.checkpoints,
      metrics,
      logger,
    };
    const runWorker = createRunWorker(deps, parts);
    worker = runWorker;
    await runWorker.start();
    stops.push(() => runWorker.stop());

    return {
      dataPlaneUrl,
      skills,
      sandboxDriver,
      egress: egress?.status,
      checkpoints: checkpoints.report,
      runtime: node.runtime,
      heartbeat: node.heartbeat,
      async stop() {
        for (const stop of stops.reverse()) await stop();
      },
    };
  } catch (error) {
    starting.abort();
    for (const stop of stops.reverse()) await stop().catch(() => {});
    throw error;
  }
}

/** The node's sandbox manager, started (reconciled); none when no tier is ready. */
async function startSandboxManager(
  deps: AgentHostDeps,
  driver: SandboxDriverStatus,
  metrics: WorkcellMetrics,
  logger: Logger,
  signal: AbortSignal,
): Promise<SandboxManager | undefined> {
  if (driver.kind === "none") {
    logger.warn({ detail: driver.detail }, "no sandbox driver: runs will be refused");
    return undefined;
  }
  const manager = new SandboxManager({
    db: deps.db,
    driver: deps.sandboxTiers.driver,
    logger,
    metrics,
    nodeId: deps.nodeId,
    config: deps.sandboxConfig,
  });
  await manager.start(signal);
  return manager;
}
