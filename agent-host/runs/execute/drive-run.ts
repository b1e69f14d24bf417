import type { Logger } from "pino";
import { agentOptionsSchema } from "../../../shared/contracts/run.ts";
import type { AgentRun } from "../../../shared/db/schema.ts";
import { domainReasonOf } from "../../../shared/errors/domain-errors.ts";
import { MAX_NETWORK_REQUESTS_PER_RUN } from "../../../shared/network/network-request-bounds.ts";
import type { TraceContext } from "../../../shared/telemetry/tracing.ts";
import { DEFAULT_APPROVAL_TIMEOUT_SECONDS } from "../../approvals/approval-policy.ts";
import { createNetworkAsk, networkApprovalTimeout } from "../../approvals/network-approvals.ts";
import { openRunApprovals } from "../../approvals/open-run-approvals.ts";
import type { RunPause } from "../../approvals/record-pause.ts";
import type { EgressRecord } from "../../egress/egress-record.ts";
import { networkRequestEventData, type RunEgress } from "../../egress/run-egress.ts";
import type { SandboxHandle } from "../../sandbox/sandbox-handle.ts";
import { secretsPrompt } from "../../secrets/secrets-prompt.ts";
import {
  buildSystemPrompt,
  type ChatMessage,
  createAgentTools,
  runAgentLoop,
  SHELL_MODEL_NAME,
  type SubagentOutcome,
} from "../agent/index.ts";
import { leasedSandboxExec } from "../change-batch/leased-sandbox-exec.ts";
import { leasedTools } from "../change-batch/leased-tools.ts";
import type { TreeBatches } from "../change-batch/tree-batches.ts";
import type { RunEnding } from "../claim/finish-run.ts";
import type { RunEventLog } from "../claim/run-event-log.ts";
import type { RunFence } from "../claim/run-fence.ts";
import { databaseRetryOf } from "../run-limits.ts";
import type { ChildRun } from "./create-child-run.ts";
import type { RunControl } from "./run-control.ts";
import { runEndingOf } from "./run-ending.ts";
import type { RunExecutorDeps } from "./run-executor-deps.ts";
import { createRunSubagentSpawner } from "./run-subagent-spawner.ts";
import { createSandboxExec } from "./sandbox-exec-adapter.ts";
import { tracedModelClient, tracedSandboxExec } from "./traced-run-io.ts";

/** What a run executes with once prepared; a sub-agent inherits most of its parent's. */
export interface Execution {
  readonly run: AgentRun;
  readonly fence: RunFence;
  readonly control: RunControl;
  readonly events: RunEventLog;
  readonly depth: number;
  /** The execution tree's change batches (shared with its sub-agents). */
  readonly tree: TreeBatches;
  readonly projectId: string;
  readonly workdirPath: string;
  readonly handle: SandboxHandle;
  readonly skills: readonly string[];
  readonly model: string | undefined;
  readonly maxTurns: number | undefined;
  readonly history: readonly ChatMessage[];
  /** The original user text (what is stored) and the model-visible variant. */
  readonly input: string;
  readonly visibleInput: string;
  readonly logger: Logger;
  /** The root run's `run.execute` span: model calls and execs are its children. */
  readonly trace: TraceContext;
  /**
   * The root run's network, which its sub-agents share (they run in its sandbox): the same
   * listener, so the same policy and narrowing, audited under the root run. Opened and
   * closed by the root only.
   */
  readonly egress?: RunEgress;
}

/** Each statement of a network approval (its insert, its polls). */
const NETWORK_APPROVAL_DB_TIMEOUT_MS = 10_000;

/** Executes a sub-agent of `parent` (child-run-execution.ts); passed in to break the cycle. */
export type RunChild = (
  child: ChildRun,
  parent: Execution,
  parentSignal: AbortSignal,
) => Promise<SubagentOutcome>;

/**
 * Runs the agent loop of a prepared run; undefined when the lease was lost, a RunPause when
 * a root run's call waits for a person (../approvals/).
 */
export async function driveRun(
  deps: RunExecutorDeps,
  x: Execution,
  runChild: RunChild,
): Promise<RunEnding | RunPause | undefined> {
  const { limits } = deps;
  const workspace = await deps.userWorkspaces.openUserWorkspace(x.run.uid, {
    signal: x.control.signal,
  });
  let egress: RunEgress | undefined;
  const ownsEgress = x.depth === 0;
  try {
    egress = ownsEgress ? await openEgress(deps, x) : x.egress;
    // What its sub-agents inherit (child-run-execution.ts spreads the parent).
    const self: Execution = egress === undefined ? x : { ...x, egress };
    const model = tracedModelClient(
      deps.modelClientFactory({
        runId: x.run.runId,
        uid: x.run.uid,
        input: x.input,
        depth: x.depth,
        ...(x.model === undefined ? {} : { model: x.model }),
        logger: x.logger,
      }),
      deps.tracing,
      x.trace,
    );
    const subagents =
      x.depth < limits.maxSubagentDepth
        ? createRunSubagentSpawner({
            db: deps.db,
            nodeId: deps.nodeId,
            leaseTtlMs: limits.leaseTtlMs,
            maxSubagentsPerRun: limits.maxSubagentsPerRun,
            parent: x.run,
            parentFence: x.fence,
            projectId: x.projectId,
            ...(x.model === undefined ? {} : { model: x.model }),
            runChild: (child, signal) => runChild(child, self, signal),
          })
        : undefined;
    // The shell model executes the message text: it gets the user's own words, never
    // the variant with the attachment list in front.
    const userText = model.name === SHELL_MODEL_NAME ? x.input : x.visibleInput;
    // Approvals are a root run's: a sub-agent's calls run under its parent's decision.
    const approvals =
      x.depth > 0
        ? undefined
        : await openRunApprovals(deps.db, x, {
            defaultTimeoutSeconds: deps.approvalTimeoutSeconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS,
            denialFails: model.name === SHELL_MODEL_NAME,
            retry: {
              policy: databaseRetryOf(deps.limits),
              logger: x.logger,
              signal: x.control.signal,
            },
          });
    // Every command and every host-side write into the Workdir runs under the Execution
    // Lease and leaves a change batch (docs/architecture.md §5).
    const scope = {
      fence: x.fence,
      workdirPath: x.workdirPath,
      tree: x.tree,
      logger: x.logger,
      silence: x.control.silence,
    };
    const result = await runAgentLoop({
      model,
      tools: leasedTools(
        createAgentTools({ ...deps.agentTools, subagents: subagents !== undefined }),
        deps.leasedCommands,
        scope,
      ),
      toolEnv: {
        sandbox: leasedSandboxExec(
          tracedSandboxExec(
            createSandboxExec(deps.sandboxes, x.handle, deps.shell?.(x.handle), egress),
            deps.tracing,
            x.trace,
            x.handle,
          ),
          deps.leasedCommands,
          scope,
          model.name === SHELL_MODEL_NAME ? "shell" : "bash",
        ),
        workspace,
        workdirPath: x.workdirPath,
        // The sandbox's mounts decide the view; the file tools follow them.
        fileView: x.handle.fileView,
        ...(subagents === undefined ? {} : { subagents }),
      },
      systemPrompt: buildSystemPrompt({
        workdirPath: x.workdirPath,
        fileView: x.handle.fileView,
        skills: x.skills,
        subagent: x.depth > 0,
        ...extraPrompt(deps.systemPromptExtra, egress),
      }),
      messages: [...x.history, { role: "user", content: userText }],
      limits: {
        ...deps.agentLimits,
        ...(x.maxTurns === undefined ? {} : { maxTurns: x.maxTurns }),
      },
      signal: x.control.signal,
      // The loop emits no terminal event: finishRun writes `run.completed` with the status.
      emit: (event) => x.events.append(event),
      logger: x.logger,
      ...(approvals === undefined ? {} : { approvals: approvals.loop }),
    });
    if (result.status === "awaiting_approval") {
      // Stopped meanwhile (cancel, shutdown): it ends as a stopped loop would, not paused.
      if (x.control.reason !== undefined || approvals === undefined || !result.paused) {
        return runEndingOf({ ...result, status: "cancelled" }, x.control);
      }
      const { timeoutSeconds } = approvals;
      return {
        kind: "paused",
        pause: result.paused,
        timeoutSeconds,
        generation: x.handle.generation,
      };
    }
    return runEndingOf(
      { ...result, status: result.status },
      x.control,
      model.name === SHELL_MODEL_NAME,
    );
  } catch (error) {
    if (domainReasonOf(error) === "lease_lost" || x.control.leaseLost) {
      x.control.stop("lease_lost");
      return undefined;
    }
    throw error;
  } finally {
    workspace.close();
    if (ownsEgress) await egress?.close();
  }
}

/**
 * A root run's network. Its sub-agents never open their own (that would give them their
 * user's ceiling, wider than a narrowed root's, and audit them apart): they use the root's
 * (Execution.egress, docs/architecture.md §13).
 */
async function openEgress(deps: RunExecutorDeps, x: Execution): Promise<RunEgress | undefined> {
  if (deps.egress === undefined) return undefined;
  const agent = agentOptionsSchema.safeParse(x.run.agent);
  const approvals = await networkApprovals(deps, x);
  const egress = await deps.egress(
    {
      uid: x.run.uid,
      runId: x.run.runId,
      agent: agent.success ? agent.data : {},
      handle: x.handle,
      notify: networkEvents(x),
      ...(approvals === undefined ? {} : { ask: approvals.ask }),
    },
    x.control.signal,
  );
  if (egress === undefined || approvals === undefined) return egress;
  // Closed only once every held connection's approval is closed too: a pause recorded
  // next must not meet a pending network approval (one pending per run).
  return {
    ...egress,
    close: async () => {
      await egress.close();
      await approvals.settled();
    },
  };
}

/** With `agent.approvals.network`, a host outside the run's narrowing asks (decision 0137). */
async function networkApprovals(deps: RunExecutorDeps, x: Execution) {
  const timeoutSeconds = await networkApprovalTimeout(
    deps.db,
    x.run,
    deps.approvalTimeoutSeconds ?? DEFAULT_APPROVAL_TIMEOUT_SECONDS,
  );
  if (timeoutSeconds === undefined) return undefined;
  return createNetworkAsk({
    db: deps.db,
    runId: x.run.runId,
    uid: x.run.uid,
    generation: x.handle.generation,
    timeoutSeconds,
    emit: (type, data) => x.events.append({ type, data }),
    logger: x.logger,
    dbTimeoutMs: NETWORK_APPROVAL_DB_TIMEOUT_MS,
  });
}

/**
 * The run's `network.request` events, the first MAX_NETWORK_REQUESTS_PER_RUN of them (as
 * many as its audit rows; the rest are counted in metrics only). An append that fails (the
 * lease is gone) is dropped: the connection was decided and audited already.
 */
function networkEvents(x: Execution): (record: EgressRecord) => void {
  let sent = 0;
  return (record) => {
    if (sent >= MAX_NETWORK_REQUESTS_PER_RUN) return;
    sent += 1;
    x.events
      .append({ type: "network.request", data: networkRequestEventData(record) })
      .catch(() => {});
  };
}

/** The deployment's text, then what the run may reach (only when it has network). */
function extraPrompt(
  deployment: string | undefined,
  egress: RunEgress | undefined,
): { extra?: string } {
  const network =
    egress === undefined
      ? undefined
      : egress.asks
        ? `Network: commands reach these hosts, through the proxy set in HTTP_PROXY / HTTPS_PROXY / ALL_PROXY: ${egress.hosts.join(", ")}. A connection to another host waits until the user approves it (the command blocks meanwhile; approval_denied or approval_expired in a 403 means it was not approved); hosts outside the user's policy are refused with 403 (an admin can allow more).`
        : `Network: commands reach only these hosts, through the proxy set in HTTP_PROXY / HTTPS_PROXY / ALL_PROXY: ${egress.hosts.join(", ")}. Anything else is refused with 403 (say so to the user: an admin can allow more hosts).`;
  const parts = [deployment, network, secretsPrompt(egress)].filter((part) => part !== undefined);
  return parts.length === 0 ? {} : { extra: parts.join("\n\n") };
}
