import type { Logger } from "pino";
import type { Db } from "../../../shared/db/client.ts";
import type { DatabaseRetry } from "../../../shared/db/database-retry.ts";
import type { WorkcellMetrics } from "../../../shared/metrics/workcell-metrics.ts";
import type { FileView } from "../../../shared/paths/file-view.ts";
import type { SandboxDriver } from "../driver.ts";
import type { SandboxTimings } from "../sandbox-config.ts";
import type { SandboxHandle } from "../sandbox-handle.ts";
import type { SandboxTier } from "../sandbox-tier.ts";
import type { AcquireResult } from "./acquire-sandbox.ts";
import type { PinSet } from "./pin-set.ts";
import type { SandboxStore } from "./sandbox-store.ts";

/** Everything the sandbox manager needs, wired once in agent-host's main.ts. */
export type SandboxManagerDeps = {
  db: Db;
  driver: SandboxDriver;
  logger: Logger;
  /** This agent-host's node id; its `nodes` row must exist (node registration). */
  nodeId: string;
  /** The manager's timings; driver settings (image, limits) belong to the drivers. */
  config: SandboxTimings;
  /** The agent-host's series (creates, destroys, exec seconds, reconciler actions). */
  metrics?: WorkcellMetrics;
  /**
   * How an exec's fence touch waits for a database that does not answer (decision 0147);
   * default: the run worker's default policy (run-limits.ts).
   */
  databaseRetry?: DatabaseRetry;
};

/** A generation this process knows to be live, with its in-flight uses. */
export type LiveSandbox = { handle: SandboxHandle; pins: PinSet };

/**
 * The state one manager instance shares with its reaper, reconciler and destroy paths.
 * It lives on the instance, never at module level: two managers in one process (tests,
 * two nodes in the local stack) must not see each other's sandboxes.
 */
export type SandboxContext = Omit<SandboxManagerDeps, "metrics"> & {
  /** The deps' metrics, or a registry of this manager alone. */
  metrics: WorkcellMetrics;
  store: SandboxStore;
  /** sandbox_id → the live generation this process holds. */
  live: Map<string, LiveSandbox>;
  /** sandbox_id → the acquire being decided in this process (under the sandbox lock). */
  inflight: Map<string, InflightAcquire>;
  /** `sandbox_id/generation` of each destroy this process has claimed and not yet ended. */
  destroying: Set<string>;
};

/** The key of `SandboxContext.destroying`. */
export function destroyKey(sandboxId: string, generation: number): string {
  return `${sandboxId}/${generation}`;
}

export type InflightAcquire = {
  workdirPath: string;
  tier: SandboxTier | undefined;
  fileView: FileView | undefined;
  done: Promise<AcquireResult>;
  /** Callers still waiting for `done`; 0 when it settles means nobody will use a create. */
  waiting: number;
};
