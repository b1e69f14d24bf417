import type { RunChangeKind } from "../../../shared/db/schema.ts";
import type { MetadataScan } from "../../workspace/index.ts";

/** What makes a file count as modified between two snapshots. */
export interface FileStamp {
  readonly size: number;
  readonly mtimeMs: number;
  /** Compared when both snapshots have them (metadata-scan.ts records them). */
  readonly ctimeMs?: number;
  readonly ino?: number;
}

/**
 * The regular files of a Workdir at one moment, with what is known about its directories
 * (a MetadataScan is one): `dirs` every directory seen, `complete` those listed in full.
 */
export type WorkdirSnapshot = Omit<MetadataScan, "files"> & {
  readonly files: ReadonlyMap<string, FileStamp>;
};

export interface WorkdirChange {
  /** Workdir-relative, as the workspace layer addresses it. */
  readonly path: string;
  readonly change: RunChangeKind;
  /** Bytes after the run; null for a deleted file. */
  readonly size: number | null;
}

/** What one command changed in its Workdir (its change batch's items). */
export interface WorkdirChanges {
  /** Sorted by path (UTF-16 code units), at most the cap given to diffWorkdirSnapshots. */
  readonly items: readonly WorkdirChange[];
  /**
   * True when the list may be incomplete: a snapshot hit a bound or could not be taken, or
   * the list was cut at its cap. What is listed is still exact.
   */
  readonly truncated: boolean;
}

/** Recorded when a snapshot could not be taken at all: nothing is known. */
export const UNKNOWN_CHANGES: WorkdirChanges = Object.freeze({ items: [], truncated: true });

/**
 * The regular files a run added, modified (size or mtime differ) or deleted, from the
 * Workdir's snapshots before and after it. A file is compared only when its directory's
 * content is known in both snapshots — listed in full, or known not to exist because an
 * ancestor was listed in full without it — so a bound hit in either snapshot can hide a
 * change (flagged `truncated`) but never invent one (an unlisted directory is not "all
 * deleted"). Deleting a whole directory therefore reports each of its files.
 *
 * The mtime is compared, not only the size, because an edit often keeps the size; with
 * ctime and inode (metadata-scan.ts records them) a tool that restores size and mtime
 * (`touch -r`, `cp -p` over an equal-sized file, rename-over) is seen too.
 */
export function diffWorkdirSnapshots(
  before: WorkdirSnapshot,
  after: WorkdirSnapshot,
  maxItems: number,
): WorkdirChanges {
  const knownBefore = knownDirectories(before);
  const knownAfter = knownDirectories(after);
  const paths = candidatePaths(before, after);
  const items: WorkdirChange[] = [];
  let truncated = before.truncated || after.truncated;
  for (const path of [...paths].sort()) {
    const dir = parentOf(path);
    if (!knownBefore(dir) || !knownAfter(dir)) {
      truncated = true;
      continue;
    }
    const was = before.files.get(path);
    const is = after.files.get(path);
    let change: WorkdirChange | undefined;
    if (was === undefined && is !== undefined) change = { path, change: "added", size: is.size };
    else if (was !== undefined && is === undefined)
      change = { path, change: "deleted", size: null };
    else if (was !== undefined && is !== undefined) {
      if (
        was.size !== is.size ||
        was.mtimeMs !== is.mtimeMs ||
        (was.ctimeMs !== undefined && is.ctimeMs !== undefined && was.ctimeMs !== is.ctimeMs) ||
        (was.ino !== undefined && is.ino !== undefined && was.ino !== is.ino)
      ) {
        change = { path, change: "modified", size: is.size };
      }
    }
    if (change === undefined) continue;
    if (items.length >= maxItems) {
      truncated = true;
      break;
    }
    items.push(change);
  }
  return { items, truncated };
}

/**
 * Whether a snapshot knows the content of directory `dir`: it was listed in full, or it was
 * never seen and its nearest seen ancestor was listed in full (so it did not exist then).
 */
function knownDirectories(snapshot: WorkdirSnapshot): (dir: string) => boolean {
  const memo = new Map<string, boolean>();
  const known = (dir: string): boolean => {
    const cached = memo.get(dir);
    if (cached !== undefined) return cached;
    let result: boolean;
    if (snapshot.complete.has(dir)) result = true;
    else if (snapshot.dirs.has(dir) || dir === "") result = false;
    else result = known(parentOf(dir));
    memo.set(dir, result);
    return result;
  };
  return known;
}

function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}

/**
 * Every path either snapshot has, or, when `after` says it equals `before` except at a few
 * paths (incremental-scans.ts, both complete), only those: the rest cannot differ.
 */
function candidatePaths(before: WorkdirSnapshot, after: WorkdirSnapshot): Set<string> {
  const derived = (after as { derivedFrom?: { base: unknown; changed: ReadonlySet<string> } })
    .derivedFrom;
  if (before === after) return new Set();
  if (derived?.base === before && !before.truncated && !after.truncated) {
    return new Set(derived.changed);
  }
  return new Set([...before.files.keys(), ...after.files.keys()]);
}
