import type { TerminalRunStatus } from "../../shared/contracts/run.ts";
import type { RunError } from "../../shared/db/schema.ts";
import type { TraceContext } from "../../shared/telemetry/tracing.ts";
import { type ClaimedRun, executeRootRun } from "./root-run-execution.ts";
import type { RunExecutorDeps } from "./run-executor-deps.ts";

export type { ClaimedRun } from "./root-run-execution.ts";
export type { RunExecutorDeps } from "./run-executor-deps.ts";

export type RootRunResult =
  | { readonly kind: "ended"; readonly status: TerminalRunStatus; readonly error?: RunError }
  /** Nothing executed; the run is pending again and must be dispatched again. */
  | { readonly kind: "handed_back"; readonly reason: string }
  /** The run stopped being ours; nothing was written after that. */
  | { readonly kind: "lease_lost" }
  /** The run awaits a person's decision and holds no slot (../approvals/). */
  | { readonly kind: "paused" };

/**
 * Executes claimed runs on this node. The work is split along its seams:
 * root-run-execution.ts prepares a root run and cleans its execution tree up,
 * child-run-execution.ts runs sub-agents in-process in the same sandbox, drive-run.ts
 * runs the agent loop of either, run-wiring.ts connects a run to what can stop it
 * (heartbeat, cancel LISTEN, shutdown), and run-recorder.ts records the outcome under
 * the claim's fence.
 */
export class RunExecutor {
  readonly #deps: RunExecutorDeps;

  constructor(deps: RunExecutorDeps) {
    this.#deps = deps;
  }

  /**
   * Runs a claimed root run to its end. `shutdown` aborting means this node stops: a run
   * still preparing is handed back (nothing ran), one already executing ends
   * `failed/node_shutdown`.
   */
  async executeRoot(
    claimed: ClaimedRun,
    shutdown: AbortSignal,
    trace?: TraceContext,
  ): Promise<RootRunResult> {
    const recorded = await executeRootRun(this.#deps, claimed, shutdown, trace);
    if (recorded.kind !== "ended") return recorded;
    const { status, error } = recorded.ending;
    return { kind: "ended", status, ...(error === undefined ? {} : { error }) };
  }
}
