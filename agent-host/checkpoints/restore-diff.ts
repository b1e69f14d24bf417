import { type BigIntStats, fstatSync, readSync } from "node:fs";
import { errnoError } from "../workspace/errno-error.ts";
import {
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOCTTY,
  O_NOFOLLOW,
  O_NONBLOCK,
  O_RDONLY,
} from "../workspace/syscalls.ts";
import type { CheckpointSyscalls, NsStat } from "./checkpoint-syscalls.ts";
import { KEPT_MODE_BITS } from "./copy-tree.ts";
import { lstatNs } from "./lstat-ns.ts";

/** One entry below the Workdir: its names, each hex-encoded (names are bytes, not UTF-8). */
export type EntryPath = string[];

/** A directory present in both trees that gets the checkpoint's mode and times back. */
export interface DirFinish {
  path: EntryPath;
  mode: string;
  atime_ns: string;
  mtime_ns: string;
}

/**
 * What a restore changes, and nothing else (docs/decisions/0155): Workdir entries moved to
 * the trash, checkpoint entries copied in (a changed file is both), and directories of both
 * trees refinished, deepest first (the Workdir root last, as path []). No path is below
 * another of the same list: a directory that is removed or put whole is not entered.
 */
export interface RestoreDiff {
  remove: EntryPath[];
  put: EntryPath[];
  dirs: DirFinish[];
}

export interface DiffDeps {
  readonly sys: FsSyscalls;
  readonly maxDepth: number;
  /** Where /proc shows our descriptors (lstat with nanoseconds of a name inside one). */
  readonly procFdDir?: string;
  /** statx by descriptor and name where offered (else lstat through /proc). */
  readonly cp?: Pick<CheckpointSyscalls, "statAt">;
  /**
   * A file whose metadata matches but whose ctime is not older counts as changed, without
   * comparing contents (the check whether a checkpoint can reuse the previous one's files).
   */
  readonly metadataOnly?: boolean;
  /**
   * The checkpoint is a btrfs snapshot of this Workdir (docs/decisions/0190): its files are
   * the Workdir's inodes as they were, same numbers and ctimes, so a Workdir file with the
   * checkpoint file's inode number and ctime is unchanged (any write, chmod, utimes,
   * rename or link since would have moved its ctime).
   */
  readonly sameInodes?: boolean;
}

const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
const FILE_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
const NAMES_PER_DIR = 1_000_000;
const COMPARE_CHUNK = 1024 * 1024;

/**
 * Compares checkpoint directory `ckFd` with the Workdir `wdFd` (both held open; every name
 * below is opened inside its parent's descriptor with O_NOFOLLOW, so nothing the agent
 * planted is followed). Two regular files are the same when type, size, kept mode bits and
 * nanosecond mtime match and the Workdir file's inode changed (ctime) strictly before the
 * checkpoint's copy of it was made: the kernel sets ctime on every write, chmod, utimes,
 * rename and link, and no one can set it back. When the metadata matches but the ctime is
 * not older (the agent wrote and reset the mtime, or the file came from an earlier
 * restore), the contents are compared byte by byte.
 */
export function diffTrees(deps: DiffDeps, ckFd: number, wdFd: number): RestoreDiff {
  const diff: RestoreDiff = { remove: [], put: [], dirs: [] };
  diffLevel(deps, ckFd, wdFd, [], diff, 1);
  const ck = fstatSync(ckFd, { bigint: true });
  diff.dirs.push(dirFinish([], ck));
  return diff;
}

function diffLevel(
  deps: DiffDeps,
  ckFd: number,
  wdFd: number,
  path: EntryPath,
  diff: RestoreDiff,
  depth: number,
): boolean {
  if (depth > deps.maxDepth) throw errnoError(Errno.ELOOP, { op: "restore", path: "" });
  const before = diff.remove.length + diff.put.length;
  const ckNames = new Map(list(deps, ckFd).map((n) => [n.toString("hex"), n]));
  for (const name of list(deps, wdFd)) {
    if (!ckNames.has(name.toString("hex"))) diff.remove.push([...path, name.toString("hex")]);
  }
  for (const [hex, name] of ckNames) {
    const entry = [...path, hex];
    const ck = lstatNs(deps, ckFd, name);
    const wd = lstatNs(deps, wdFd, name);
    if (ck === undefined) continue; // not in the checkpoint after all: nothing to put
    if (wd === undefined) {
      diff.put.push(entry);
    } else if (ck.isDirectory() && wd.isDirectory()) {
      if (!diffSubdir(deps, ckFd, wdFd, name, entry, diff, depth)) replace(diff, entry);
    } else if (!(ck.isFile() && wd.isFile() && sameFile(deps, ckFd, wdFd, name, ck, wd))) {
      replace(diff, entry);
    }
  }
  return diff.remove.length + diff.put.length > before;
}

function replace(diff: RestoreDiff, entry: EntryPath): void {
  diff.remove.push(entry);
  diff.put.push(entry);
}

/** Recurses into a directory of both trees; false when either will not open as one. */
function diffSubdir(
  deps: DiffDeps,
  ckParent: number,
  wdParent: number,
  name: Buffer,
  entry: EntryPath,
  diff: RestoreDiff,
  depth: number,
): boolean {
  const ck = openDir(deps, ckParent, name);
  if (ck === undefined) return false;
  try {
    const wd = openDir(deps, wdParent, name);
    if (wd === undefined) return false;
    try {
      const changed = diffLevel(deps, ck, wd, entry, diff, depth + 1);
      const ckSt = fstatSync(ck, { bigint: true });
      const wdSt = fstatSync(wd, { bigint: true });
      if (changed || !sameMeta(ckSt, wdSt)) diff.dirs.push(dirFinish(entry, ckSt));
      return true;
    } finally {
      deps.sys.close(wd);
    }
  } finally {
    deps.sys.close(ck);
  }
}

function sameMeta(ck: NsStat, wd: NsStat): boolean {
  return (
    (ck.mode & BigInt(KEPT_MODE_BITS)) === (wd.mode & 0o7777n) &&
    ck.mtimeNs === wd.mtimeNs &&
    (!wd.isFile() || ck.size === wd.size)
  );
}

function sameFile(
  deps: DiffDeps,
  ckParent: number,
  wdParent: number,
  name: Buffer,
  ck: NsStat,
  wd: NsStat,
): boolean {
  if (!sameMeta(ck, wd)) return false;
  if (wd.ctimeNs < ck.ctimeNs) return true;
  if (deps.sameInodes === true && wd.ino === ck.ino && wd.ctimeNs === ck.ctimeNs) return true;
  if (deps.metadataOnly === true) return false;
  return sameContent(deps, ckParent, wdParent, name, ck, wd);
}

function sameContent(
  deps: DiffDeps,
  ckParent: number,
  wdParent: number,
  name: Buffer,
  ck: NsStat,
  wd: NsStat,
): boolean {
  const a = openFile(deps, ckParent, name, ck);
  if (a === undefined) return false;
  try {
    const b = openFile(deps, wdParent, name, wd);
    if (b === undefined) return false;
    try {
      const left = Buffer.alloc(COMPARE_CHUNK);
      const right = Buffer.alloc(COMPARE_CHUNK);
      for (let at = 0; at < Number(ck.size); ) {
        const n = readSync(a, left, 0, COMPARE_CHUNK, at);
        const m = readSync(b, right, 0, COMPARE_CHUNK, at);
        if (n !== m || n === 0 || !left.subarray(0, n).equals(right.subarray(0, m))) return false;
        at += n;
      }
      return true;
    } finally {
      deps.sys.close(b);
    }
  } finally {
    deps.sys.close(a);
  }
}

/** Opens a regular file by name without following it; undefined if it is not `seen` now. */
function openFile(deps: DiffDeps, parent: number, name: Buffer, seen: NsStat): number | undefined {
  const opened = deps.sys.openat(parent, name, FILE_FLAGS);
  if (!opened.ok) return undefined;
  const st = fstatSync(opened.value, { bigint: true });
  if (st.isFile() && st.ino === seen.ino) return opened.value;
  deps.sys.close(opened.value);
  return undefined;
}

function openDir(deps: DiffDeps, parent: number, name: Buffer): number | undefined {
  const opened = deps.sys.openat(parent, name, DIR_FLAGS);
  if (opened.ok) return opened.value;
  if (opened.errno === Errno.ELOOP || opened.errno === Errno.ENOTDIR) return undefined;
  if (opened.errno === Errno.ENOENT) return undefined;
  throw errnoError(opened.errno, { op: "restore", path: name.toString() });
}

function list(deps: DiffDeps, dirFd: number): Buffer[] {
  const listed = deps.sys.readdirAt(dirFd, NAMES_PER_DIR);
  if (!listed.ok) throw errnoError(listed.errno, { op: "restore", path: "" });
  return listed.value.names;
}

function dirFinish(path: EntryPath, st: BigIntStats): DirFinish {
  return {
    path,
    mode: String(st.mode),
    atime_ns: String(st.atimeNs),
    mtime_ns: String(st.mtimeNs),
  };
}
