import { setImmediate as nextMacrotask } from "node:timers/promises";
import type { WorkspaceFs } from "../workspace/index.ts";

/** Bounds of one snapshot; see RunWorkerLimits (`changes*`). */
export interface SnapshotLimits {
  /** Files and directories recorded in total; directories past it are left unlisted. */
  readonly maxEntries: number;
  /** Deepest directory listed (the Workdir itself is depth 0). */
  readonly maxDepth: number;
  /** Wall-clock budget; directories not reached by then are left unlisted. */
  readonly timeoutMs: number;
}

/** What makes a file count as modified between two snapshots. */
export interface FileStamp {
  readonly size: number;
  readonly mtimeMs: number;
  /** Compared when both snapshots have them (metadata-scan.ts does): catch `touch -r`. */
  readonly ctimeMs?: number;
  readonly ino?: number;
}

/**
 * The regular files of a Workdir at one moment, with what is known about its directories:
 * `dirs` are every directory seen (the Workdir itself is ""), `complete` the ones whose
 * listing was read in full. A file's presence or absence is known only below a complete
 * directory (see workdir-changes.ts), so a bounded snapshot is still exact where it looked.
 */
export interface WorkdirSnapshot {
  readonly files: ReadonlyMap<string, FileStamp>;
  readonly dirs: ReadonlySet<string>;
  readonly complete: ReadonlySet<string>;
  /** True when some directory was left unlisted or was listed only in part. */
  readonly truncated: boolean;
}

/** Directories listed between two yields to the event loop (heartbeats, cancels, LISTEN). */
const DIRECTORIES_PER_YIELD = 16;

/**
 * Walks a Workdir breadth-first through the safe workspace layer: every listing is
 * resolved no-follow from the Workdir's descriptor, shows only regular files and real
 * directories (symlinks, FIFOs, devices and the layer's in-flight temp files are hidden,
 * never followed), so nothing outside the Workdir is ever looked at, whatever the run
 * left in it. Children are visited in name order, so two snapshots of a tree that grew past
 * a bound still cover mostly the same directories.
 *
 * Bounded by entries, depth and time; past a bound the rest is left unlisted and the
 * snapshot says `truncated`. A subdirectory that cannot be listed (removed meanwhile,
 * swapped for a symlink, a path too long for the layer) is left incomplete the same way.
 * Only the Workdir itself failing to list throws, as does an abort of `signal`.
 */
export async function takeWorkdirSnapshot(
  workdir: WorkspaceFs,
  limits: SnapshotLimits,
  signal: AbortSignal,
): Promise<WorkdirSnapshot> {
  const deadline = performance.now() + limits.timeoutMs;
  const files = new Map<string, FileStamp>();
  const dirs = new Set<string>([""]);
  const complete = new Set<string>();
  let truncated = false;
  let entries = 0;
  const queue: { path: string; depth: number }[] = [{ path: "", depth: 0 }];
  for (let head = 0; head < queue.length; head++) {
    signal.throwIfAborted();
    const dir = queue[head] as { path: string; depth: number };
    const remaining = limits.maxEntries - entries;
    if (remaining <= 0 || (head > 0 && performance.now() > deadline)) {
      truncated = true;
      break;
    }
    if (head > 0 && head % DIRECTORIES_PER_YIELD === 0) await nextMacrotask(undefined, { signal });
    let listing: Awaited<ReturnType<WorkspaceFs["list"]>>;
    try {
      // One more than the budget: a directory that fills it exactly is still complete.
      listing = await workdir.list(dir.path, { maxEntries: remaining + 1, signal });
    } catch (error) {
      signal.throwIfAborted();
      if (dir.path === "") throw error;
      truncated = true;
      continue;
    }
    let listedAll = !listing.truncated;
    for (const item of listing.items) {
      if (entries >= limits.maxEntries) {
        listedAll = false;
        break;
      }
      entries++;
      const path = dir.path === "" ? item.name : `${dir.path}/${item.name}`;
      if (item.type === "file") {
        files.set(path, { size: item.size, mtimeMs: item.mtimeMs });
        continue;
      }
      dirs.add(path);
      if (dir.depth + 1 <= limits.maxDepth) queue.push({ path, depth: dir.depth + 1 });
      else truncated = true;
    }
    if (listedAll) complete.add(dir.path);
    else truncated = true;
  }
  return { files, dirs, complete, truncated };
}
