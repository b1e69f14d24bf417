import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import type { WorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import type { Tracing } from "../../../shared/telemetry/tracing.ts";
import type { BeforeRunCheckpoint } from "../../checkpoints/before-run-checkpoint.ts";
import type { OpenRunEgress } from "../../egress/run-egress.ts";
import type { RunQuotaGate } from "../../quota/run-quota-gate.ts";
import type { UserWorkspaces } from "../../workspace/index.ts";
import type { AgentLimits, AgentToolsOptions } from "../agent/index.ts";
import type { LeasedCommands } from "../change-batch/leased-commands.ts";
import type { RunWorkerLimits } from "../run-limits.ts";
import type { BackgroundCleanups } from "./background-cleanups.ts";
import type { CancelWatcher } from "./cancel-watcher.ts";
import type { ModelClientFactory } from "./model-client-factory.ts";
import type { RunSandboxes } from "./run-sandboxes.ts";
import type { ShellFor } from "./sandbox-exec-adapter.ts";
import type { SkillProjection } from "./skill-projection.ts";

/** Everything root and child executions need, wired once by the run worker. */
export interface RunExecutorDeps {
  readonly db: Db;
  readonly sandboxes: RunSandboxes;
  readonly userWorkspaces: UserWorkspaces;
  readonly skillProjection: SkillProjection;
  readonly modelClientFactory: ModelClientFactory;
  readonly cancelWatcher: CancelWatcher;
  /** The Execution Lease and change batch around every command (change-batch/). */
  readonly leasedCommands: LeasedCommands;
  readonly nodeId: string;
  readonly logger: Logger;
  /** Terminal runs, hand-backs and lease losses are counted where they are recorded. */
  readonly metrics: WorkcellMetrics;
  readonly limits: RunWorkerLimits;
  /** Spans of preparation, model calls, execs and the ending (noTracing() when off). */
  readonly tracing: Tracing;
  /** Tool options (bash timeouts, output caps) for every run. */
  readonly agentTools?: Omit<AgentToolsOptions, "subagents">;
  /** Agent loop bounds; a run's `agent.max_steps` overrides `maxTurns`. */
  readonly agentLimits?: Partial<AgentLimits>;
  /** Deployment text appended to every system prompt. */
  readonly systemPromptExtra?: string;
  /** How the bash tool runs a command line in a sandbox; default the image's /bin/sh. */
  readonly shell?: ShellFor;
  /** A uid over its workspace quota gets no new run (prepare-run.ts) and no next command. */
  readonly quota?: RunQuotaGate;
  /** Before-run checkpoints (agent-host/checkpoints/before-run-checkpoint.ts); absent: none. */
  readonly beforeRun?: BeforeRunCheckpoint;
  /** A run's network (decision 0117); absent: no run has network (today's sandboxes). */
  readonly egress?: OpenRunEgress;
  /**
   * Where a root's execution-tree cleanup runs once its slot is free (decision 0158);
   * absent: inline, holding the slot (tests of the executor alone).
   */
  readonly cleanups?: BackgroundCleanups;
  /** How long an approval waits when the run does not say (default a day, ../approvals/). */
  readonly approvalTimeoutSeconds?: number;
}
