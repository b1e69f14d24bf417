import { basename, dirname } from "node:path";
import type { Logger } from "pino";
import { type StagingSweep, sweepStagedBinds } from "../sandbox/container/staged-binds.ts";
import { sweepLegacyStagedBinds } from "../sandbox/container/sweep-legacy-staged-binds.ts";

/**
 * Removes the staging mounts of creates a previous process of this node died in the middle
 * of (root-only binds of users' directories, decision 0060), then what creates left in the
 * layout from before per-node staging (decision 0073). It runs before this process creates
 * anything. A failure is logged and the node starts: a stale mount is the operator's to
 * remove, not a reason to stay down.
 */
export async function sweepStaging(
  stagingDir: string,
  signal: AbortSignal,
  logger: Logger,
): Promise<void> {
  const failedSweep = (error: unknown): StagingSweep => ({
    removed: [],
    failed: [{ name: ".", error: (error as Error).message }],
  });
  const own = await sweepStagedBinds(stagingDir, signal).catch(failedSweep);
  const legacy = await sweepLegacyStagedBinds(
    dirname(stagingDir),
    basename(stagingDir),
    signal,
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
}
