import type { S3Client } from "@aws-sdk/client-s3";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import type { CapabilityPublicKey } from "../shared/capability/capability-keys.ts";
import type { Db } from "../shared/db/client.ts";
import type { CorsOrigins } from "../shared/http/cors-for-origins.ts";
import { createWorkcellMetrics, type WorkcellMetrics } from "../shared/metrics/workcell-metrics.ts";
import { SANDBOX_RUNTIME_MOUNT } from "../shared/paths/runtime-paths.ts";
import { failRunsOfNode } from "../shared/runs/fail-node-runs.ts";
import { DEFAULT_NODE_HEARTBEAT_INTERVAL_MS } from "../shared/runs/node-liveness.ts";
import type { Tracing } from "../shared/telemetry/tracing.ts";
import { createS3AttachmentObjectStore } from "./attachments/s3-attachment-object-store.ts";
import { createDataPlaneApp } from "./data-plane/data-plane-app.ts";
import { startDataPlaneServer } from "./data-plane/start-data-plane-server.ts";
import { noIsolationSandboxes } from "./no-isolation-sandboxes.ts";
import { NodeHeartbeat } from "./node-heartbeat.ts";
import { createNodeReadiness, type ReadinessCheck } from "./node-readiness.ts";
import { detectQuotaEnforcement } from "./quota/detect-quota-enforcement.ts";
import { createAccountingQuota } from "./quota/workspace-quota.ts";
import { recordNodeRuntime } from "./record-node-runtime.ts";
import { registerNode } from "./register-node.ts";
import type { ModelConfig } from "./runs/agent/model-config.ts";
import type { ListenFn } from "./runs/listen.ts";
import { modelClientFactoryFor } from "./runs/model-client-factory.ts";
import type { RunSandboxes } from "./runs/run-sandboxes.ts";
import { RunWorker } from "./runs/run-worker.ts";
import { IMAGE_SHELL, type SandboxShell, type ShellFor } from "./runs/sandbox-exec-adapter.ts";
import { createSqsWorkQueue } from "./runs/sqs-work-queue.ts";
import { type RuntimeAssetsReport, verifyRuntimeAssets } from "./runtime/runtime-assets.ts";
import { runtimeAssetsImage } from "./runtime/sandbox-image.ts";
import type { SandboxTierSet } from "./sandbox/detect-sandbox-tiers.ts";
import type { SandboxConfig } from "./sandbox/sandbox-config.ts";
import { SandboxManager } from "./sandbox/sandbox-manager.ts";
import type { SandboxTier, SandboxTierStatus } from "./sandbox/sandbox-tier.ts";
import { tierOfContainerId } from "./sandbox/sandbox-tier.ts";
import { type AgentHostSkills, createAgentHostSkills } from "./skills/agent-host-skills.ts";
import { refreshFailureError } from "./skills/refresh-handler.ts";
import { createLibcSyscalls } from "./workspace/libc-syscalls.ts";
import { createPathResolver } from "./workspace/path-resolver.ts";
import { createUserWorkspaces } from "./workspace/user-workspaces.ts";

/** Bound on verifying the Runtime Assets (hashing every file, running every probe). */
export const RUNTIME_VERIFY_TIMEOUT_MS = 10 * 60_000;
/** The sandbox user (agent-host/sandbox/container-spec.ts): it must own what it writes. */
export const SANDBOX_OWNER = { uid: 1000, gid: 1000 } as const;

/** Everything one agent-host needs, parsed and connected by its entry (main.ts or the local stack). */
export type AgentHostDeps = {
  /** postgres.js on a node, PGlite in the one-process local mode. */
  db: Db;
  /** LISTEN for cancels (postgres.js or PGlite); without it the heartbeat notices them. */
  listen?: ListenFn;
  sqs: SQSClient;
  runQueueUrl: string;
  deadLetterQueueUrl?: string;
  s3: S3Client;
  attachmentsBucket: string;
  /** users/<uid dirname>/workspace and skills/ live below it (shared by all nodes). */
  dataRoot: string;
  nodeId: string;
  capabilityPublicKeys: readonly CapabilityPublicKey[];
  /** The ready sandbox drivers of this node (detectSandboxTiers), with every tier's preflight. */
  sandboxTiers: SandboxTierSet;
  sandboxConfig: SandboxConfig;
  modelConfig: ModelConfig;
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
};

/** The tier runs get by default (container when ready, else process), or none: runs are refused. */
export type SandboxDriverStatus = {
  kind: SandboxTier | "none";
  detail: string;
  tiers: SandboxTierStatus[];
};

export type AgentHost = {
  dataPlaneUrl: string;
  skills: AgentHostSkills;
  sandboxDriver: SandboxDriverStatus;
  /** The Runtime Assets as verified at start (checksums and probes), once done. */
  runtime: Promise<RuntimeAssetsReport>;
  /** This node's liveness as its heartbeat sees it (for /readyz). */
  heartbeat: NodeHeartbeat;
  stop(): Promise<void>;
};

/**
 * Starts one agent-host (ARCHITECTURE.md §1): the owner of workspace bytes (data plane),
 * skill projections, sandboxes and the run worker on this node. Order matters: the node
 * row exists before the sandbox manager reconciles, builtin skills are registered before
 * anything refreshes a projection, and the worker consumes only once all it needs is up.
 * Stopping runs the other way round: the worker hands back or finishes its runs first.
 */
export async function startAgentHost(deps: AgentHostDeps): Promise<AgentHost> {
  const logger = deps.logger.child({ node_id: deps.nodeId });
  const metrics = deps.metrics ?? createWorkcellMetrics(new Registry());
  const stops: Array<() => Promise<void>> = [];
  const starting = new AbortController();
  try {
    const sys = createLibcSyscalls();
    const userWorkspaces = createUserWorkspaces({
      dataRoot: deps.dataRoot,
      sys,
      resolver: createPathResolver(sys),
      // Only root can give files to the sandbox user; a non-root host keeps them its own
      // (and then the sandbox user cannot write them: run agent-hosts as root).
      ...(process.getuid?.() === 0 ? { owner: SANDBOX_OWNER } : {}),
    });
    // No filesystem quota on the data roots this runs on so far: the accounting mode
    // (docs/decisions/0017).
    const quota = createAccountingQuota({ dataRoot: deps.dataRoot });
    const skills = createAgentHostSkills({
      db: deps.db,
      sys,
      dataRoot: deps.dataRoot,
      logger,
      s3: deps.s3,
      uploadsBucket: deps.attachmentsBucket,
      workspaces: userWorkspaces,
      metrics,
    });
    await skills.registerBuiltins(starting.signal);

    let readiness: ReadinessCheck | undefined;
    const server = await startDataPlaneServer({
      port: deps.dataPlane.port,
      hostname: deps.dataPlane.hostname,
      app: createDataPlaneApp({
        userWorkspaces,
        quota,
        publicKeys: deps.capabilityPublicKeys,
        logger,
        metrics,
        attachments: {
          objects: createS3AttachmentObjectStore({ s3: deps.s3, bucket: deps.attachmentsBucket }),
        },
        skills,
        readiness: () => readiness,
        ...(deps.tracing === undefined ? {} : { tracing: deps.tracing }),
        ...(deps.dataPlane.corsOrigins === undefined
          ? {}
          : { allowedOrigins: deps.dataPlane.corsOrigins }),
      }),
    });
    stops.push(() => server.close());
    const dataPlaneUrl = deps.dataPlane.publicUrl ?? server.url;
    await registerNode(deps.db, { nodeId: deps.nodeId, dataPlaneUrl });
    // Runs a previous process of this node left running are over; ending them first
    // releases their sandboxes, so the reconciler below removes rather than adopts them.
    const ended = await failRunsOfNode(deps.db, deps.nodeId);
    const endedRuns = ended.reduce((sum, scope) => sum + scope.runIds.length, 0);
    if (endedRuns > 0) metrics.runs.inc({ status: "failed" }, endedRuns);
    if (ended.length > 0) {
      logger.warn(
        { run_ids: ended.flatMap((s) => s.runIds) },
        "ended runs a previous process of this node left running (node_lost)",
      );
    }

    const sandboxDriver = driverStatus(deps.sandboxTiers);
    // Every asset's checksums and probe, once per start (ARCHITECTURE.md §3), in the
    // background: a first verification hashes ~300 MB. Until it is done the process
    // tier's bash waits for it; a failure leaves every asset not ready.
    const stopping = new AbortController();
    const runtime = verifyRuntimeAssets({
      treeDir: deps.sandboxTiers.runtimeDir,
      bwrap: "bwrap",
      signal: AbortSignal.any([stopping.signal, AbortSignal.timeout(RUNTIME_VERIFY_TIMEOUT_MS)]),
    }).catch(
      (error: unknown): RuntimeAssetsReport => ({
        version: "unknown",
        assets: [],
        error: (error as Error).message,
      }),
    );
    // The runtime report operators read (GET /v1/admin/runtime): the tiers now, the
    // assets once verified; a failed write is logged, the node runs on.
    const tiers = deps.sandboxTiers.statuses.map(({ tier, ready, detail }) => ({
      tier,
      ready,
      detail,
    }));
    const quotaEnforcement = await detectQuotaEnforcement(deps.dataRoot, starting.signal);
    if (quotaEnforcement.mode === "accounting") {
      logger.info({ detail: quotaEnforcement.detail }, "workspace quotas: accounting mode");
    }
    await recordNodeRuntime(
      deps.db,
      deps.nodeId,
      { tiers, quota: quotaEnforcement },
      starting.signal,
    );
    const recorded = runtime.then(async (report) => {
      for (const asset of report.assets.filter((a) => !a.ready)) {
        logger.warn({ asset: asset.name, reason: asset.reason }, "runtime asset not ready");
      }
      await recordNodeRuntime(
        deps.db,
        deps.nodeId,
        { tiers, quota: quotaEnforcement, assets: report },
        stopping.signal,
      ).catch((error: unknown) => {
        if (!stopping.signal.aborted)
          logger.warn({ err: error }, "could not record the Runtime Assets report");
      });
    });
    stops.push(async () => {
      stopping.abort();
      await recorded;
    });
    let sandboxes: RunSandboxes;
    let manager: SandboxManager | undefined;
    if (sandboxDriver.kind !== "none") {
      manager = new SandboxManager({
        db: deps.db,
        driver: deps.sandboxTiers.driver,
        logger,
        metrics,
        nodeId: deps.nodeId,
        config: deps.sandboxConfig,
      });
      await manager.start(starting.signal);
      const started = manager;
      stops.push(() => started.stop());
      sandboxes = manager;
    } else {
      logger.warn({ detail: sandboxDriver.detail }, "no sandbox driver: runs will be refused");
      sandboxes = noIsolationSandboxes(sandboxDriver.detail);
    }

    const heartbeat = new NodeHeartbeat({
      db: deps.db,
      nodeId: deps.nodeId,
      intervalMs: deps.nodeHeartbeatIntervalMs ?? DEFAULT_NODE_HEARTBEAT_INTERVAL_MS,
      beatTimeoutMs: deps.nodeHeartbeatIntervalMs ?? DEFAULT_NODE_HEARTBEAT_INTERVAL_MS,
      nodeTtlMs: deps.sandboxConfig.nodeTtlMs,
      tiers: (signal) =>
        manager === undefined ? Promise.resolve([]) : deps.sandboxTiers.probe(signal),
      onState: (state) => followNodeState(manager, state, logger),
      logger,
    });
    await heartbeat.start();
    readiness = createNodeReadiness({
      db: deps.db,
      sqs: deps.sqs,
      runQueueUrl: deps.runQueueUrl,
      tiers: (signal) =>
        manager === undefined ? Promise.resolve([]) : deps.sandboxTiers.probe(signal),
      quiesced: () => manager?.quiesced ?? false,
    });
    stops.push(() => heartbeat.stop({ markStopped: true }));
    if (manager !== undefined) {
      // Runs after the worker stopped (stops run in reverse): no live row is left
      // pointing at a node that is going away.
      const draining = manager;
      stops.push(async () => {
        const { destroyed } = await draining.releaseAll(
          AbortSignal.timeout(
            deps.sandboxConfig.drainTimeoutMs + deps.sandboxConfig.createTimeoutMs,
          ),
        );
        if (destroyed.length > 0)
          logger.info({ destroyed: destroyed.length }, "released sandboxes on stop");
      });
    }

    const worker = new RunWorker({
      db: deps.db,
      dataRoot: deps.dataRoot,
      queue: createSqsWorkQueue({
        sqs: deps.sqs,
        queueUrl: deps.runQueueUrl,
        metrics,
        ...(deps.deadLetterQueueUrl === undefined
          ? {}
          : { deadLetterQueueUrl: deps.deadLetterQueueUrl }),
      }),
      sandboxManager: sandboxes,
      shell: shellFor(
        runtime,
        runtimeAssetsImage(deps.sandboxTiers.runtimeDir).then(
          (image) => image === deps.sandboxConfig.image,
        ),
      ),
      userWorkspaces,
      skillProjection: skills.refresher,
      modelClientFactory: modelClientFactoryFor(deps.modelConfig),
      nodeId: deps.nodeId,
      logger,
      ...(deps.tracing === undefined ? {} : { tracing: deps.tracing }),
      metrics,
      ...(deps.listen === undefined ? {} : { listen: deps.listen }),
      ...(deps.workerConcurrency === undefined
        ? {}
        : { limits: { concurrency: deps.workerConcurrency } }),
      // A refresh that could not finish goes back to the queue (or its DLQ) as an error.
      skillsRefresh: async (message, signal) => {
        const failure = refreshFailureError(await skills.refreshHandler.handle(message, signal));
        if (failure) throw failure;
      },
    });
    await worker.start();
    stops.push(() => worker.stop());

    return {
      dataPlaneUrl,
      skills,
      sandboxDriver,
      runtime,
      heartbeat,
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

/**
 * An operator's quiesce or resume (admin routes write the node row; a heartbeat reads it)
 * carried out by this node's sandbox manager. A failure is logged and retried at the next
 * state change the heartbeat sees; acquires already read the row and refuse meanwhile.
 */
async function followNodeState(
  manager: SandboxManager | undefined,
  state: "active" | "quiesced",
  logger: Logger,
): Promise<void> {
  if (manager === undefined) return;
  try {
    if (state === "quiesced" && !manager.quiesced) {
      const { destroyed } = await manager.quiesce(AbortSignal.timeout(5 * 60_000));
      logger.info({ destroyed: destroyed.length }, "node quiesced by an operator");
    } else if (state === "active" && manager.quiesced) {
      await manager.resume(AbortSignal.timeout(30_000));
      logger.info("node resumed by an operator");
    }
  } catch (error) {
    logger.error({ err: error, state }, "could not follow the node's state");
  }
}

function driverStatus(tiers: SandboxTierSet): SandboxDriverStatus {
  const kind = tiers.driver.defaultTier();
  if (kind === undefined) {
    return {
      kind: "none",
      detail: tiers.statuses.map((s) => `${s.tier}: ${s.detail}`).join("; "),
      tiers: tiers.statuses,
    };
  }
  return { kind, detail: tiers.driver.status(kind).detail, tiers: tiers.statuses };
}

/**
 * The bash tool's shell per tier. Both tiers run the Runtime Assets' bash at /runtime,
 * or refuse with the asset's reason; nothing falls back to another binary. In the
 * container tier that holds when the image is the Runtime Assets' own
 * (workcell-sandbox:<key>, the default): its root has the same libc and loader as
 * /runtime. Another image an operator configured (SANDBOX_IMAGE; the busybox test image)
 * may have neither, so the tool runs that image's own /bin/sh (docs/decisions/0042).
 */
function shellFor(
  runtime: Promise<RuntimeAssetsReport>,
  containerImageIsAssets: Promise<boolean>,
): ShellFor {
  const runtimeShell = runtime.then((report): SandboxShell => {
    const bash = report.assets.find((a) => a.name === "bash");
    return bash?.ready
      ? { ok: true, argv: [`${SANDBOX_RUNTIME_MOUNT}/usr/bin/bash`, "-c"] }
      : {
          ok: false,
          reason: `the bash Runtime Asset is not ready (${bash?.reason ?? report.error ?? "unknown"})`,
        };
  });
  const containerShell = containerImageIsAssets.then((assets) =>
    assets ? runtimeShell : IMAGE_SHELL,
  );
  return (handle) =>
    tierOfContainerId(handle.containerId) === "process" ? runtimeShell : containerShell;
}
