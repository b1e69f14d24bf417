import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { createHostMounts, type HostMounts } from "../instance/host-mounts.ts";
import { releaseDir, type StagingSweep } from "./staged-binds.ts";

/** What a pre-0060 create staged below each `<container name>/` directory. */
const STAGED_KEYS: ReadonlySet<string> = new Set(["workspace", "workdir", "skills"]);
/** Container names (containerName, container-labels.ts) all start so; node ids need not. */
const CONTAINER_NAME_PREFIX = "workcell-";

/**
 * Removes what creates left in the staging layout from before per-node staging
 * (decision 0060): `<bindsRoot>/<container name>/<workspace|workdir|skills>` directly
 * below `<dataRoot>/sandbox-binds`, where today each node has `<bindsRoot>/<nodeId>/`.
 * Such a directory says nothing about its node; every process that could have made it ran
 * the old code, so any node's start may clear it (decision 0073).
 *
 * An entry counts as old-layout only if it is a real directory (never followed through a
 * symlink) named like a container, is not this node's own staging directory, and holds
 * at least one entry and nothing but the staged keys: a node directory holds container
 * names instead, so another node's live staging is never mistaken for one. Each is
 * unmounted and `rmdir`-ed (releaseDir), never deleted recursively.
 */
export async function sweepLegacyStagedBinds(
  bindsRoot: string,
  ownNodeId: string,
  signal: AbortSignal,
  mounts: HostMounts = createHostMounts(),
): Promise<StagingSweep> {
  const sweep: StagingSweep = { removed: [], failed: [] };
  const names = await readdir(bindsRoot).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return [];
    throw e;
  });
  for (const name of names.sort()) {
    signal.throwIfAborted();
    if (name === ownNodeId || !name.startsWith(CONTAINER_NAME_PREFIX)) continue;
    const dir = join(bindsRoot, name);
    try {
      if (!(await lstat(dir)).isDirectory()) continue;
      const keys = await readdir(dir);
      if (keys.length === 0 || !keys.every((key) => STAGED_KEYS.has(key))) continue;
      await releaseDir(dir, mounts);
      sweep.removed.push(name);
    } catch (error) {
      sweep.failed.push({ name, error: (error as Error).message });
    }
  }
  return sweep;
}
