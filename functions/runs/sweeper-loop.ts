import { sleepResolveOnAbort } from "../../shared/async/sleep-resolve-on-abort.ts";
import { databaseUptime } from "./database-uptime.ts";
import type { SweeperDeps } from "./dispatch-sweeper.ts";
import { sweepRuns } from "./sweep-runs.ts";

/** Between sweeps in a long-lived process (the local Workcell, an agent-host loop). */
export const DEFAULT_SWEEP_INTERVAL_MS = 15_000;

/**
 * Sweeps (expired leases, then pending runs: sweep-runs.ts) every `intervalMs` until
 * `signal` aborts. A failed sweep (database or queue down) is logged and retried on the
 * next tick: the loop itself never dies of it. The loop remembers database outages across
 * its sweeps (`uptime`), so the sweep after one waits its grace (decision 0149).
 */
export async function runSweeperLoop(
  deps: SweeperDeps,
  signal: AbortSignal,
  intervalMs: number = DEFAULT_SWEEP_INTERVAL_MS,
): Promise<void> {
  const withUptime: SweeperDeps = { ...deps, uptime: deps.uptime ?? databaseUptime() };
  while (!signal.aborted) {
    try {
      await sweepRuns(withUptime, signal);
    } catch (error) {
      if (!signal.aborted) deps.logger.warn({ err: error }, "run sweep failed; retrying next tick");
    }
    await sleepResolveOnAbort(intervalMs, signal);
  }
}
