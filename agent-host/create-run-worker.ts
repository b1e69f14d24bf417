import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Logger } from "pino";
import type { Db } from "../shared/db/client.ts";
import type { ListenFn } from "../shared/listen/listen-fn.ts";
import type { WorkcellMetrics } from "../shared/metrics/workcell-metrics.ts";
import type { Tracing } from "../shared/telemetry/tracing.ts";
import { beforeRunCheckpoint } from "./checkpoints/before-run-checkpoint.ts";
import type { Checkpoints } from "./checkpoints/checkpoints.ts";
import type { NodeEgress } from "./egress/start-node-egress.ts";
import type { StartedNode } from "./node/start-node.ts";
import { createRunQuotaGate } from "./quota/run-quota-gate.ts";
import type { WorkspaceQuotaAccounting } from "./quota/workspace-quota.ts";
import type { ModelConfig } from "./runs/agent/model-config.ts";
import { modelClientFactoryFor } from "./runs/execute/model-client-factory.ts";
import type { RunSandboxes } from "./runs/execute/run-sandboxes.ts";
import { runtimeShellFor } from "./runs/execute/runtime-shell-for.ts";
import { createSqsWorkQueue } from "./runs/queue/sqs-work-queue.ts";
import { RunWorker } from "./runs/run-worker.ts";
import { runtimeAssetsImage } from "./runtime/sandbox-image.ts";
import type { SandboxTierSet } from "./sandbox/detect-sandbox-tiers.ts";
import type { SandboxConfig } from "./sandbox/sandbox-config.ts";
import type { AgentHostSkills } from "./skills/agent-host-skills.ts";
import { refreshFailureError } from "./skills/refresh-handler.ts";
import type { UserWorkspaces } from "./workspace/index.ts";

/** The agent-host's settings the worker reads (a part of AgentHostDeps). */
export type RunWorkerHostDeps = {
  db: Db;
  listen?: ListenFn;
  sqs: SQSClient;
  runQueueUrl: string;
  deadLetterQueueUrl?: string;
  dataRoot: string;
  nodeId: string;
  sandboxTiers: SandboxTierSet;
  sandboxConfig: SandboxConfig;
  modelConfig: ModelConfig;
  /** The deployment's approval wait (APPROVAL_TIMEOUT_SECONDS); default a day. */
  approvalTimeoutSeconds?: number;
  workerConcurrency?: number;
  tracing?: Tracing;
};

/** What the worker runs on: the parts startAgentHost made before it. */
export type RunWorkerParts = {
  node: StartedNode;
  sandboxes: RunSandboxes;
  egress: NodeEgress | undefined;
  userWorkspaces: UserWorkspaces;
  quota: WorkspaceQuotaAccounting;
  skills: AgentHostSkills;
  checkpoints: Checkpoints;
  metrics: WorkcellMetrics;
  logger: Logger;
};

/**
 * The node's run worker, not started yet: the caller holds it before start() so that a
 * tier recovery during the start can already wake it (the last part of an agent-host to
 * start).
 */
export function createRunWorker(deps: RunWorkerHostDeps, parts: RunWorkerParts): RunWorker {
  const { node, skills, logger, metrics } = parts;
  return new RunWorker({
    ...(parts.egress === undefined ? {} : { egress: parts.egress.open }),
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
    sandboxManager: parts.sandboxes,
    // A tier outage stops only that tier's runs (decision 0114): runs of a tier that
    // still answers are claimed; with no tier answering, nothing is.
    canClaim: () => node.tiers.someTierAnswers,
    unavailableTiers: () => ({ tiers: node.tiers.missing, defaultTier: node.defaultTier }),
    shell: runtimeShellFor(
      node.runtime,
      runtimeAssetsImage(deps.sandboxTiers.runtimeDir).then(
        (image) => image === deps.sandboxConfig.image,
      ),
    ),
    userWorkspaces: parts.userWorkspaces,
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
    quota: createRunQuotaGate({ db: deps.db, accounting: parts.quota, logger }),
    beforeRun: beforeRunCheckpoint(parts.checkpoints),
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
}
