import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Logger } from "pino";
import type { Db } from "../../shared/db/client.ts";
import type { WorkcellMetrics } from "../../shared/metrics/workcell-metrics.ts";
import { DEFAULT_NODE_HEARTBEAT_INTERVAL_MS } from "../../shared/runs/node-liveness.ts";
import type { RuntimeAssetsReport } from "../runtime/runtime-assets.ts";
import { startRuntimeReport } from "../runtime/start-runtime-report.ts";
import type { SandboxTierSet } from "../sandbox/detect-sandbox-tiers.ts";
import type { SandboxManager } from "../sandbox/lifecycle/sandbox-manager.ts";
import type { SandboxConfig } from "../sandbox/sandbox-config.ts";
import { SANDBOX_TIERS, type SandboxTier } from "../sandbox/sandbox-tier.ts";
import { endLeftRuns } from "./end-left-runs.ts";
import { followNodeState } from "./follow-node-state.ts";
import { NodeHeartbeat } from "./node-heartbeat.ts";
import { createNodeReadiness, type ReadinessCheck } from "./node-readiness.ts";
import { registerNode } from "./register-node.ts";
import { sweepStaging } from "./sweep-staging.ts";
import { TierWatch } from "./tier-watch.ts";

export type NodeDeps = {
  db: Db;
  sqs: SQSClient;
  runQueueUrl: string;
  nodeId: string;
  /** Advertised in the node's `nodes` row. */
  dataPlaneUrl: string;
  dataRoot: string;
  sandboxTiers: SandboxTierSet;
  sandboxConfig: SandboxConfig;
  /** Between heartbeats; the node TTL is sandboxConfig.nodeTtlMs. */
  heartbeatIntervalMs?: number;
  /** Whether the node's egress proxy runs, for the runtime report. */
  egressStatus?: { ready: boolean; detail: string };
  /** How the node takes checkpoints (reflink or copy), for the runtime report. */
  checkpointsStatus?: { mode: "reflink" | "copy"; detail: string };
  /**
   * Starts this node's sandbox manager (undefined: no tier is ready). Called once the
   * node row exists, a previous process's runs are ended and its staging mounts are gone;
   * the node then holds the manager until its own stop.
   */
  startSandboxes(signal: AbortSignal): Promise<SandboxManager | undefined>;
  /** Called after every tier answers again and the reconcile pass ran (wakes the worker). */
  onTiersRecovered(): void;
  metrics: WorkcellMetrics;
  logger: Logger;
  signal: AbortSignal;
};

export type StartedNode = {
  /** This node's liveness as its heartbeat sees it (for /readyz). */
  heartbeat: NodeHeartbeat;
  readiness: ReadinessCheck;
  /** The tiers that answer now: runs of a tier that does not are not claimed. */
  tiers: TierWatch;
  /** The tier a run naming none gets here (the first ready one, tiered-driver.ts). */
  defaultTier: SandboxTier | undefined;
  /** The Runtime Assets as verified at start (checksums and probes), once done. */
  runtime: Promise<RuntimeAssetsReport>;
  /** The node's sandbox manager, if a tier was ready. */
  manager: SandboxManager | undefined;
  /** Releases the node's sandboxes, marks it stopped, and stops what start started. */
  stop(): Promise<void>;
};

/**
 * The node's life in the cluster (docs/architecture.md §10): its `nodes` row, ending what a
 * previous process of it left running, sweeping its staging mounts, the runtime report,
 * its sandbox manager, the watch of its tiers, the heartbeat that keeps it alive and
 * follows the state an operator gives it (quiesce), and /readyz. Order matters: the row
 * exists before the manager reconciles, and the heartbeat starts once the manager it
 * follows is there. A failed start stops what it started.
 */
export async function startNode(deps: NodeDeps): Promise<StartedNode> {
  const { db, nodeId, logger } = deps;
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s();
  };
  try {
    await registerNode(db, { nodeId, dataPlaneUrl: deps.dataPlaneUrl });
    await endLeftRuns(db, nodeId, deps.metrics, logger);
    await sweepStaging(deps.sandboxTiers.bindStagingDir, deps.signal, logger);
    const report = await startRuntimeReport(
      {
        db,
        nodeId,
        dataRoot: deps.dataRoot,
        sandboxTiers: deps.sandboxTiers,
        logger,
        ...(deps.egressStatus === undefined ? {} : { egress: deps.egressStatus }),
        ...(deps.checkpointsStatus === undefined ? {} : { checkpoints: deps.checkpointsStatus }),
      },
      deps.signal,
    );
    stops.push(report.stop);
    const manager = await deps.startSandboxes(deps.signal);
    if (manager !== undefined) stops.push(() => manager.stop());

    const tiers = watchTiers(deps, manager);
    stops.push(() => tiers.settled());
    const intervalMs = deps.heartbeatIntervalMs ?? DEFAULT_NODE_HEARTBEAT_INTERVAL_MS;
    const heartbeat = new NodeHeartbeat({
      db,
      nodeId,
      intervalMs,
      beatTimeoutMs: intervalMs,
      nodeTtlMs: deps.sandboxConfig.nodeTtlMs,
      tiers: (signal) => tiers.probe(signal),
      onState: (state) => followNodeState(manager, state, logger),
      logger,
    });
    await heartbeat.start();
    const readiness = createNodeReadiness({
      db,
      sqs: deps.sqs,
      runQueueUrl: deps.runQueueUrl,
      tiers: (signal) => tiers.probe(signal),
      degraded: () => tiers.degraded,
      quiesced: () => manager?.quiesced ?? false,
    });
    stops.push(() => heartbeat.stop({ markStopped: true }));
    // Runs after the worker stopped (the caller stops it first): no live row is left
    // pointing at a node that is going away.
    if (manager !== undefined) stops.push(() => releaseAll(manager, deps));

    const readyTiers = deps.sandboxTiers.statuses.filter((s) => s.ready).map((s) => s.tier);
    const defaultTier = SANDBOX_TIERS.find((t) => readyTiers.includes(t));
    return { heartbeat, readiness, tiers, defaultTier, runtime: report.runtime, manager, stop };
  } catch (error) {
    await stop().catch(() => {});
    throw error;
  }
}

/**
 * Docker going away at run time (the tiers were ready at start): the node stops claiming
 * and says not ready until the probe finds every tier again, then one reconcile pass
 * removes what a create cut off by the outage left (decision 0058).
 */
function watchTiers(deps: NodeDeps, manager: SandboxManager | undefined): TierWatch {
  const { logger } = deps;
  return new TierWatch({
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
      deps.onTiersRecovered();
    },
    logger,
  });
}

async function releaseAll(manager: SandboxManager, deps: NodeDeps): Promise<void> {
  const { destroyed } = await manager.releaseAll(
    AbortSignal.timeout(deps.sandboxConfig.drainTimeoutMs + deps.sandboxConfig.createTimeoutMs),
  );
  if (destroyed.length > 0)
    deps.logger.info({ destroyed: destroyed.length }, "released sandboxes on stop");
}
