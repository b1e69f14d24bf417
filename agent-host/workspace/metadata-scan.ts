import { closeSync, constants, type Dirent, lstatSync, openSync, readdirSync } from "node:fs";
import { setImmediate as nextMacrotask } from "node:timers/promises";
import { direntKind } from "./dirent-kind.ts";
import { isTempName } from "./fs-context.ts";
import { isAddressableName, type NameLimits } from "./workspace-path.ts";

/** Bounds of one scan. */
export interface MetadataScanLimits {
  /** Files and directories recorded in total; past it the rest is left unlisted. */
  readonly maxEntries: number;
  /** Deepest directory listed (the scanned directory itself is depth 0). */
  readonly maxDepth: number;
  /** Wall-clock budget; subdirectories not reached by then are left unlisted. */
  readonly timeoutMs: number;
}

/** What makes a regular file count as modified between two scans. */
export interface MetadataStamp {
  readonly size: number;
  readonly mtimeMs: number;
  /** Changes on every write and cannot be set back by the writer (unlike mtime). */
  readonly ctimeMs: number;
  readonly ino: number;
}

/**
 * The regular files below a directory at one moment. `dirs` are the directories seen
 * ("" = the scanned directory), `complete` those listed in full: a file's presence or
 * absence is only known below a complete directory, so a bounded scan is exact where it
 * looked and says `truncated` about the rest.
 */
export interface MetadataScan {
  readonly files: ReadonlyMap<string, MetadataStamp>;
  readonly dirs: ReadonlySet<string>;
  readonly complete: ReadonlySet<string>;
  /**
   * True when something was left unlisted: a bound was hit, a subdirectory could not be
   * opened, or a name could not be reported (not addressable, or the layer's temp prefix,
   * which an agent could otherwise use to hide a file).
   */
  readonly truncated: boolean;
}

/** Entries stat-ed between two yields to the event loop (heartbeats, cancels, LISTEN). */
const ENTRIES_PER_YIELD = 2_000;
const OPEN_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Metadata only (never a file's bytes): a walk (each directory's entries, then its
 * subdirectories) of the directory open as `dirFd`
 * that never follows a symlink and never leaves it. Each directory is opened from its
 * parent's descriptor through /proc/self/fd/<fd>/<name> with O_NOFOLLOW|O_DIRECTORY (the
 * magic link pins the parent; a name swapped for a symlink fails with ELOOP and is left
 * unlisted), listed through its own descriptor, and each regular file lstat-ed by name
 * inside it. So whatever a sandbox plants (symlinks to the host, FIFOs, a directory swapped
 * mid-walk) nothing outside is ever looked at and nothing blocks. Node's synchronous fs is
 * used on purpose: about ten times faster per entry than the layer's FFI calls, which is
 * what makes a scan per command affordable; the walk yields every ENTRIES_PER_YIELD entries.
 *
 * `onDir` sees each directory's descriptor before it is listed.
 *
 * Throws only when `dirFd` itself cannot be listed, or when `signal` aborts.
 */
export async function scanMetadata(
  dirFd: number,
  limits: MetadataScanLimits,
  names: NameLimits,
  signal: AbortSignal,
  onDir?: (rel: string, fd: number) => void,
): Promise<MetadataScan> {
  const deadline = performance.now() + limits.timeoutMs;
  const files = new Map<string, MetadataStamp>();
  const dirs = new Set<string>([""]);
  const complete = new Set<string>();
  const state = { truncated: false, entries: 0, sinceYield: 0 };

  const walk = async (fd: number, rel: string, depth: number): Promise<void> => {
    const base = `/proc/self/fd/${fd}`;
    // Before its listing: whoever tracks changes (incremental-scans.ts) learns its identity.
    onDir?.(rel, fd);
    const listing = readdirSync(base, { withFileTypes: true });
    listing.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    let listedAll = true;
    // The directory's own entries first, then its subdirectories: a bound hit deeper down
    // never leaves a shallower directory incomplete.
    const subdirs: { name: string; path: string }[] = [];
    for (const entry of listing) {
      if (state.entries >= limits.maxEntries) {
        listedAll = false;
        break;
      }
      if (++state.sinceYield >= ENTRIES_PER_YIELD) {
        state.sinceYield = 0;
        await nextMacrotask(undefined, { signal });
      }
      const { name } = entry;
      const kind = kindOf(entry, base);
      if (kind === "other") continue;
      state.entries++;
      // U+FFFD: the name's bytes were not UTF-8, so it cannot be reported faithfully.
      if (isTempName(name) || name.includes("\uFFFD") || !isAddressableName(name, names)) {
        state.truncated = true;
        continue;
      }
      const path = rel === "" ? name : `${rel}/${name}`;
      if (kind === "file") {
        const st = lstatSync(`${base}/${name}`, { throwIfNoEntry: false });
        if (st?.isFile()) {
          files.set(path, { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino });
        }
        continue;
      }
      dirs.add(path);
      subdirs.push({ name, path });
    }
    for (const { name, path } of subdirs) {
      // The time budget is checked per directory: past it, subdirectories are seen, not listed.
      if (
        depth + 1 > limits.maxDepth ||
        state.entries >= limits.maxEntries ||
        performance.now() > deadline
      ) {
        state.truncated = true;
        continue;
      }
      let child: number;
      try {
        child = openSync(`${base}/${name}`, OPEN_DIR);
      } catch {
        // Removed meanwhile, swapped for a symlink (ELOOP) or a file: left unlisted.
        state.truncated = true;
        continue;
      }
      try {
        await walk(child, path, depth + 1);
      } catch {
        signal.throwIfAborted();
        state.truncated = true;
      } finally {
        closeSync(child);
      }
    }
    if (listedAll) complete.add(rel);
    else state.truncated = true;
  };

  signal.throwIfAborted();
  await walk(dirFd, "", 0);
  return { files, dirs, complete, truncated: state.truncated };
}

/** d_type when the filesystem gives it, else one lstat (DT_UNKNOWN on some filesystems). */
export function kindOf(entry: Dirent, base: string): "file" | "dir" | "other" {
  const kind = direntKind(entry);
  if (kind !== "unknown") return kind;
  const st = lstatSync(`${base}/${entry.name}`, { throwIfNoEntry: false });
  if (st?.isFile()) return "file";
  if (st?.isDirectory()) return "dir";
  return "other";
}
