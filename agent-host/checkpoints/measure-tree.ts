import { fstatSync } from "node:fs";
import { errnoError } from "../workspace/errno-error.ts";
import { Errno, O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, O_RDONLY } from "../workspace/syscalls.ts";
import type { CheckpointSyscalls } from "./checkpoint-syscalls.ts";
import { emptyTreeStats, listKinds, type TreeCopyDeps, type TreeStats } from "./copy-tree.ts";
import { lstatNs } from "./lstat-ns.ts";

type MeasureDeps = Pick<TreeCopyDeps, "sys" | "maxEntries" | "maxDepth"> & {
  readonly cp?: Pick<CheckpointSyscalls, "statAt">;
};

/**
 * What copyTree would take from `dirFd`, without copying: the logical bytes of its regular
 * files (what a checkpoint counts against the quota), and its files, directories and
 * skipped entries. Same no-follow walk, so a symlinked directory is skipped, not measured.
 * Kinds come from the listing's d_type (decision 0171) and sizes from statx relative to the
 * held directory where `cp` offers it (0172). `onDirectory` gets the inode number of each
 * directory entered below `dirFd` (a snapshot's check for nested subvolumes, 0190).
 */
export function measureTree(
  deps: MeasureDeps,
  dirFd: number,
  signal: AbortSignal,
  onDirectory?: (ino: bigint) => void,
): TreeStats {
  const stats = emptyTreeStats();
  measureLevel({ ...deps, onDirectory }, dirFd, signal, stats, 1);
  return stats;
}

function measureLevel(
  deps: MeasureDeps & { onDirectory: ((ino: bigint) => void) | undefined },
  dirFd: number,
  signal: AbortSignal,
  stats: TreeStats,
  depth: number,
): void {
  const errCtx = { op: "checkpoint", path: "" };
  if (depth > deps.maxDepth) throw errnoError(Errno.ELOOP, errCtx);
  for (const { name, kind } of listKinds(dirFd, stats, deps.maxEntries)) {
    signal.throwIfAborted();
    if (kind === "other") {
      stats.skipped++;
      continue;
    }
    // A directory is opened no-follow (a swapped symlink fails and is skipped); anything
    // else is stat'ed for its kind and size, never opened.
    if (kind !== "dir") {
      const st = lstatNs(deps, dirFd, name);
      if (st === undefined) continue;
      if (st.isFile()) {
        stats.files++;
        stats.bytes += Number(st.size);
        continue;
      }
      if (!st.isDirectory()) {
        stats.skipped++;
        continue;
      }
    }
    measureDirectory(deps, dirFd, name, signal, stats, depth);
  }
}

function measureDirectory(
  deps: MeasureDeps & { onDirectory: ((ino: bigint) => void) | undefined },
  parentFd: number,
  name: Buffer,
  signal: AbortSignal,
  stats: TreeStats,
  depth: number,
): void {
  const child = deps.sys.openat(parentFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (!child.ok) {
    stats.skipped++;
    return;
  }
  stats.dirs++;
  try {
    deps.onDirectory?.(fstatSync(child.value, { bigint: true }).ino);
    measureLevel(deps, child.value, signal, stats, depth + 1);
  } finally {
    deps.sys.close(child.value);
  }
}
