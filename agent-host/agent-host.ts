import { basename, dirname } from "node:path";
import type { S3Client } from "@aws-sdk/client-s3";
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Logger } from "pino";
import { Registry } from "prom-client";
import type { CapabilityPublicKey } from "../shared/capability/capability-keys.ts";
import type { Db } from "../shared/db/client.ts";
import type { CorsOrigins } from "../shared/http/cors-for-origins.ts";
import { createRequestRateLimiter } from "../shared/limits/request-rate-limiter.ts";
import { DEFAULT_USER_LIMITS } from "../shared/limits/user-limits.ts";
import { createWorkcellMetrics, type WorkcellMetrics } from "../shared/metrics/workcell-metrics.ts";
import { failRunsOfNode } from "../shared/runs/fail-node-runs.ts";
import { DEFAULT_NODE_HEARTBEAT_INTERVAL_MS } from "../shared/runs/node-liveness.ts";
import type { Tracing } from "../shared/telemetry/tracing.ts";
import { createS3AttachmentObjectStore } from "./attachments/s3-attachment-object-store.ts";
import { createDataPlaneApp } from "./data-plane/data-plane-app.ts";
import { startDataPlaneServer } from "./data-plane/start-data-plane-server.ts";
import { createThreadRevocations } from "./data-plane/thread-revocations.ts";
import { type NodeEgressConfig, startNodeEgress } from "./egress/start-node-egress.ts";
import { followNodeState } from "./follow-node-state.ts";
import { noIsolationSandboxes } from "./no-isolation-sandboxes.ts";
import { NodeHeartbeat } from "./node-heartbeat.ts";
import { createNodeReadiness, type ReadinessCheck } from "./node-readiness.ts";
import { createRunQuotaGate } from "./quota/run-quota-gate.ts";
import { createAccountingQuota } from "./quota/workspace-quota.ts";
import { registerNode } from "./register-node.ts";
import type { ModelConfig } from "./runs/agent/model-config.ts";
import type { ListenFn } from "./runs/listen.ts";
import { modelClientFactoryFor } from "./runs/model-client-factory.ts";
import type { RunSandboxes } from "./runs/run-sandboxes.ts";
import { RunWorker } from "./runs/run-worker.ts";
import { runtimeShellFor } from "./runs/runtime-shell-for.ts";
import { createSqsWorkQueue } from "./runs/sqs-work-queue.ts";
import type { RuntimeAssetsReport } from "./runtime/runtime-assets.ts";
import { runtimeAssetsImage } from "./runtime/sandbox-image.ts";
import { startRuntimeReport } from "./runtime/start-runtime-report.ts";
import type { SandboxTierSet } from "./sandbox/detect-sandbox-tiers.ts";
import type { SandboxConfig } from "./sandbox/sandbox-config.ts";
import { SandboxManager } from "./sandbox/sandbox-manager.ts";
import { SANDBOX_TIERS } from "./sandbox/sandbox-tier.ts";
import { type StagingSweep, sweepStagedBinds } from "./sandbox/staged-binds.ts";
import { sweepLegacyStagedBinds } from "./sandbox/sweep-legacy-staged-binds.ts";
import { type SandboxDriverStatus, sandboxDriverStatus } from "./sandbox-driver-status.ts";
import { type AgentHostSkills, createAgentHostSkills } from "./skills/agent-host-skills.ts";
import { refreshFailureError } from "./skills/refresh-handler.ts";
import { TierWatch } from "./tier-watch.ts";
import { createLibcSyscalls } from "./workspace/libc-syscalls.ts";
import { createPathResolver } from "./workspace/path-resolver.ts";
import { createUserWorkspaces } from "./workspace/user-workspaces.ts";

/** The sandbox user (agent-host/sandbox/container-spec.ts): it must own what it writes. */
export const SANDBOX_OWNER = { uid: 1000, gid: 1000 } as const;

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
  /** The Runtime Assets as verified at start (checksums and probes), once done. */
  runtime: Promise<RuntimeAssetsReport>;
  /** This node's liveness as its heartbeat sees it (for /readyz). */
  heartbeat: NodeHeartbeat;
  stop(): Promise<void>;
};

/**
 * Starts one agent-host (docs/architecture.md §1): the owner of workspace bytes (data plane),
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
        revocations: createThreadRevocations({ db: deps.db }),
        // The API's limit and bucket: a user's file requests count as API requests do.
        rateLimiter: createRequestRateLimiter({
          db: deps.db,
          defaultRequestsPerMinute: DEFAULT_USER_LIMITS.requests_per_minute,
        }),
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

    // Staging mounts of creates a previous process of this node died in the middle of
    // (root-only binds of users' directories) go before this process creates anything;
    // a failure is logged and the node starts (decision 0060).
    // Then what creates left in the layout from before per-node staging (decision 0073).
    const staging = deps.sandboxTiers.bindStagingDir;
    const failedSweep = (error: unknown): StagingSweep => ({
      removed: [],
      failed: [{ name: ".", error: (error as Error).message }],
    });
    const own = await sweepStagedBinds(staging, starting.signal).catch(failedSweep);
    const legacy = await sweepLegacyStagedBinds(
      dirname(staging),
      basename(staging),
      starting.signal,
    ).catch(failedSweep);
    const swept: StagingSweep = {
      removed: [...own.removed, ...legacy.removed.map((name) => `../${name}`)],
      failed: [...own.failed, ...legacy.failed.map((f) => ({ ...f, name: `../${f.name}` }))],
    };
    if (swept.removed.length > 0) {
      logger.warn({ staging: swept.removed }, "removed staging mounts a previous process left");
    }
    if (swept.failed.length > 0) {
      logger.error({ failed: swept.failed }, "could not remove stale staging mounts");
    }

    const sandboxDriver = sandboxDriverStatus(deps.sandboxTiers);
    const egress =
      deps.egress === undefined
        ? undefined
        : startNodeEgress({ db: deps.db, logger, metrics }, deps.egress);
    if (egress !== undefined) stops.push(() => egress.stop());
    const { runtime, stop: stopRuntimeReport } = await startRuntimeReport(
      {
        db: deps.db,
        nodeId: deps.nodeId,
        dataRoot: deps.dataRoot,
        sandboxTiers: deps.sandboxTiers,
        logger,
        ...(egress === undefined ? {} : { egress: egress.status }),
      },
      starting.signal,
    );
    stops.push(stopRuntimeReport);
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

    // Docker going away at run time (the tiers were ready at start): the node stops
    // claiming and says not ready until the probe finds every tier again, then one
    // reconcile pass removes what a create cut off by the outage left (decision 0058).
    let worker: RunWorker | undefined;
    // The tier a run naming none gets here (tiered-driver.ts defaultTier: the first ready).
    const readyTiers = deps.sandboxTiers.statuses.filter((s) => s.ready).map((s) => s.tier);
    const defaultTier = SANDBOX_TIERS.find((t) => readyTiers.includes(t));
    const tierWatch = new TierWatch({
      expected:
        manager === undefined
          ? []
          : deps.sandboxTiers.statuses.filter((s) => s.ready).map((s) => s.tier),
      probe: (signal) =>
        manager === undefined ? Promise.resolve([]) : deps.sandboxTiers.probe(signal),
      onRecovered: async () => {
        const report = await manager?.reconcile(
          AbortSignal.timeout(deps.sandboxConfig.createTimeoutMs),
          { afterOutage: true },
        );
        if (report !== undefined && report.destroyed.length > 0)
          logger.info({ destroyed: report.destroyed }, "removed containers left by the outage");
        worker?.wake();
      },
      logger,
    });
    stops.push(() => tierWatch.settled());
    const heartbeat = new NodeHeartbeat({
      db: deps.db,
      nodeId: deps.nodeId,
      intervalMs: deps.nodeHeartbeatIntervalMs ?? DEFAULT_NODE_HEARTBEAT_INTERVAL_MS,
      beatTimeoutMs: deps.nodeHeartbeatIntervalMs ?? DEFAULT_NODE_HEARTBEAT_INTERVAL_MS,
      nodeTtlMs: deps.sandboxConfig.nodeTtlMs,
      tiers: (signal) => tierWatch.probe(signal),
      onState: (state) => followNodeState(manager, state, logger),
      logger,
    });
    await heartbeat.start();
    readiness = createNodeReadiness({
      db: deps.db,
      sqs: deps.sqs,
      runQueueUrl: deps.runQueueUrl,
      tiers: (signal) => tierWatch.probe(signal),
      degraded: () => tierWatch.degraded,
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

    worker = new RunWorker({
      ...(egress === undefined ? {} : { egress: egress.open }),
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
      // A tier outage stops only that tier's runs (decision 0114): runs of a tier that
      // still answers are claimed; with no tier answering, nothing is.
      canClaim: () => tierWatch.someTierAnswers,
      unavailableTiers: () => ({ tiers: tierWatch.missing, defaultTier }),
      shell: runtimeShellFor(
        runtime,
        runtimeAssetsImage(deps.sandboxTiers.runtimeDir).then(
          (image) => image === deps.sandboxConfig.image,
        ),
      ),
      userWorkspaces,
      skillProjection: skills.refresher,
      modelClientFactory: modelClientFactoryFor(deps.modelConfig),
      ...(deps.approvalTimeoutSeconds === undefined
        ? {}
        : { approvalTimeoutSeconds: deps.approvalTimeoutSeconds }),
      nodeId: deps.nodeId,
      logger,
      ...(deps.tracing === undefined ? {} : { tracing: deps.tracing }),
      metrics,
      ...(deps.listen === undefined ? {} : { listen: deps.listen }),
      limits: {
        ...(deps.workerConcurrency === undefined ? {} : { concurrency: deps.workerConcurrency }),
        // Affinity needs the same liveness as the sandbox manager (decision 0113).
        nodeTtlMs: deps.sandboxConfig.nodeTtlMs,
      },
      // The same accounting as the data plane: a run's commands and the Files API count
      // against one figure per uid (docs/decisions/0050).
      quota: createRunQuotaGate({ db: deps.db, accounting: quota, logger }),
      // A refresh that could not finish goes back to the queue (or its DLQ) as an error.
      // Its line names the API request that queued it, when it does (docs/decisions/0069).
      skillsRefresh: async (message, signal, requestId) => {
        const outcome = await skills.refreshHandler.handle(message, signal);
        logger.info(
          {
            uid: message.uid,
            ok: outcome.ok,
            ...(requestId === undefined ? {} : { request_id: requestId }),
          },
          "skills refreshed from the queue",
        );
        const failure = refreshFailureError(outcome);
        if (failure) throw failure;
      },
    });
    const runWorker = worker;
    await runWorker.start();
    stops.push(() => runWorker.stop());

    return {
      dataPlaneUrl,
      skills,
      sandboxDriver,
      egress: egress?.status,
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
