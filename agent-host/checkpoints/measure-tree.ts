import type { Stats } from "node:fs";
import { errnoError } from "../workspace/errno-error.ts";
import { Errno, O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, O_RDONLY } from "../workspace/syscalls.ts";
import { emptyTreeStats, type TreeCopyDeps, type TreeStats } from "./copy-tree.ts";

/**
 * What copyTree would take from `dirFd`, without copying: the logical bytes of its regular
 * files (what a checkpoint counts against the quota), and its files, directories and
 * skipped entries. Same no-follow walk, so a symlinked directory is skipped, not measured.
 * `onDirectory` sees each directory entered below `dirFd` (a snapshot's check for nested
 * subvolumes).
 */
export function measureTree(
  deps: Pick<TreeCopyDeps, "sys" | "maxEntries" | "maxDepth">,
  dirFd: number,
  signal: AbortSignal,
  onDirectory: (st: Stats) => void = () => {},
): TreeStats {
  const stats = emptyTreeStats();
  measureLevel({ ...deps, onDirectory }, dirFd, signal, stats, 1);
  return stats;
}

function measureLevel(
  deps: Pick<TreeCopyDeps, "sys" | "maxEntries" | "maxDepth"> & {
    onDirectory: (st: Stats) => void;
  },
  dirFd: number,
  signal: AbortSignal,
  stats: TreeStats,
  depth: number,
): void {
  const errCtx = { op: "checkpoint", path: "" };
  if (depth > deps.maxDepth) throw errnoError(Errno.ELOOP, errCtx);
  const seen = stats.files + stats.dirs + stats.skipped;
  const listed = deps.sys.readdirAt(dirFd, Math.max(deps.maxEntries - seen, 0));
  if (!listed.ok) throw errnoError(listed.errno, errCtx);
  for (const name of listed.value.names) {
    signal.throwIfAborted();
    const st = deps.sys.lstatAt(dirFd, name);
    if (!st.ok) continue;
    if (st.value.isFile()) {
      stats.files++;
      stats.bytes += st.value.size;
    } else if (st.value.isDirectory()) {
      const child = deps.sys.openat(dirFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (!child.ok) {
        stats.skipped++;
        continue;
      }
      stats.dirs++;
      deps.onDirectory(st.value);
      try {
        measureLevel(deps, child.value, signal, stats, depth + 1);
      } finally {
        deps.sys.close(child.value);
      }
    } else {
      stats.skipped++;
    }
  }
}
