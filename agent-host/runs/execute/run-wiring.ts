import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import type { RunFence } from "../claim/run-fence.ts";
import { RunLease } from "../claim/run-lease.ts";
import type { RunWorkerLimits } from "../run-limits.ts";
import type { CancelWatcher } from "./cancel-watcher.ts";
import type { RunControl } from "./run-control.ts";

export interface RunWiringDeps {
  readonly db: Db;
  readonly cancelWatcher: CancelWatcher;
  readonly limits: Pick<RunWorkerLimits, "leaseTtlMs" | "heartbeatIntervalMs">;
}

export interface WiredRun {
  readonly runId: string;
  readonly fence: RunFence;
  readonly control: RunControl;
  readonly logger: Logger;
  /** Root runs only: this node stopping stops the run (`shutdown`). */
  readonly shutdown?: AbortSignal;
  /** A run this node just claimed: the claim's UPDATE was its first heartbeat. */
  readonly claimed?: { readonly sentAt: number; readonly cancelRequested: boolean };
}

/**
 * Runs `body` with the run wired to what can stop it: its heartbeat (lease + cancel
 * poll), the cancel LISTEN and, for a root run, the node's shutdown; each stops the run's
 * control with its reason. The first heartbeat (or the claim, which read the row) comes
 * before `body`, so a cancel committed before the claim is seen at once.
 *
 * This is the one place a run's wiring is stopped: after `body` settles (returned or
 * threw) and before the caller records anything, so the heartbeat neither outlives the
 * run nor mistakes the run's own ending for a lost lease.
 */
export async function withRunWiring<T>(
  deps: RunWiringDeps,
  run: WiredRun,
  body: () => Promise<T>,
): Promise<T> {
  const { control, shutdown } = run;
  const lease = new RunLease({
    db: deps.db,
    fence: run.fence,
    leaseTtlMs: deps.limits.leaseTtlMs,
    heartbeatIntervalMs: deps.limits.heartbeatIntervalMs,
    logger: run.logger,
    onCancelRequested: () => control.stop("cancel"),
    onLost: () => control.stop("lease_lost"),
    silence: control.silence,
  });
  const unwatch = deps.cancelWatcher.watch(run.runId, () => control.stop("cancel"));
  const onShutdown = () => control.stop("shutdown");
  if (shutdown?.aborted) onShutdown();
  else shutdown?.addEventListener("abort", onShutdown, { once: true });
  try {
    await lease.start(run.claimed);
    return await body();
  } finally {
    unwatch();
    shutdown?.removeEventListener("abort", onShutdown);
    await lease.stop();
  }
}
