import { type BigIntStats, fstatSync } from "node:fs";
import { WorkcellError } from "../../shared/errors/index.ts";
import { errnoError } from "../workspace/errno-error.ts";
import { readAt, writeFully } from "../workspace/fd-io.ts";
import type { Owner } from "../workspace/fs-context.ts";
import {
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_CREAT,
  O_DIRECTORY,
  O_EXCL,
  O_NOCTTY,
  O_NOFOLLOW,
  O_NONBLOCK,
  O_RDONLY,
  O_WRONLY,
  type SysPath,
} from "../workspace/syscalls.ts";
import type { CheckpointCopyMode, CheckpointSyscalls } from "./checkpoint-syscalls.ts";
import { type ListedEntry, listEntries } from "./list-entries.ts";
import { lstatNs } from "./lstat-ns.ts";

/** Bytes per read/write when a file is copied rather than cloned. */
export const COPY_CHUNK_BYTES = 1024 * 1024;
/**
 * Mode bits a copy keeps: permissions and the sticky bit. Set-user/group-ID bits are
 * dropped: a checkpoint never hands a privilege back, whoever set it.
 */
export const KEPT_MODE_BITS = 0o1777;

export interface TreeCopyDeps {
  readonly sys: FsSyscalls;
  readonly cp: CheckpointSyscalls;
  /** Owner of every entry the copy creates (the sandbox user in a Workdir); unset: ours. */
  readonly owner?: Owner;
  readonly maxEntries: number;
  readonly maxDepth: number;
}

/** What a walk found: regular files, directories, their logical bytes, what it skipped. */
export interface TreeStats {
  files: number;
  dirs: number;
  bytes: number;
  /** Symlinks, FIFOs, sockets, devices, and names that changed kind under the walk. */
  skipped: number;
}

export function emptyTreeStats(): TreeStats {
  return { files: 0, dirs: 0, bytes: 0, skipped: 0 };
}

const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
const FILE_READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
const FILE_CREATE_FLAGS = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
/** Errnos of FICLONE that mean "not here", so the bytes are copied instead. */
const NO_CLONE = new Set([Errno.EOPNOTSUPP, Errno.EINVAL, Errno.EXDEV, Errno.ENOTTY, Errno.EPERM]);
/** Errnos of copy_file_range that mean "not here": the bytes go through us instead. */
const NO_COPY_RANGE = new Set([Errno.ENOSYS, Errno.EXDEV, Errno.EINVAL, Errno.EOPNOTSUPP]);

/**
 * Copies the contents of directory `srcFd` into the empty directory `dstFd`, both held
 * open: regular files and real directories only, each opened by name inside its parent's
 * descriptor with O_NOFOLLOW, so a symlink the agent planted (even one swapped in under the
 * walk) is never followed; symlinks and special files are skipped and counted. A file is
 * cloned (FICLONE) in `reflink` mode and its bytes copied otherwise or where the clone is
 * refused. Modes (KEPT_MODE_BITS) and nanosecond mtimes are kept; the caller finishes
 * `dstFd` itself with finishDirectory.
 */
export async function copyTree(
  deps: TreeCopyDeps,
  srcFd: number,
  dstFd: number,
  mode: CheckpointCopyMode,
  signal: AbortSignal,
  base?: number,
): Promise<TreeStats> {
  const stats = emptyTreeStats();
  await copyLevel(deps, srcFd, dstFd, mode, signal, stats, 1, base);
  return stats;
}

/**
 * Copies one entry `name` of `srcParent` (a regular file, or a real directory with all
 * below it) as `dstName` into `dstParent`, with copyTree's rules; anything else is skipped.
 * A restore stages only what differs this way (restore-workdir.ts).
 */
export async function copyEntry(
  deps: TreeCopyDeps,
  srcParent: number,
  name: Buffer,
  dstParent: number,
  dstName: Buffer,
  mode: CheckpointCopyMode,
  signal: AbortSignal,
): Promise<TreeStats> {
  const stats = emptyTreeStats();
  const st = deps.sys.lstatAt(srcParent, name);
  if (!st.ok) throw errnoError(st.errno, { op: "checkpoint", path: printable(name) });
  if (st.value.isDirectory()) {
    await copyDirectory(deps, srcParent, dstParent, name, mode, signal, stats, 1, dstName);
  } else if (st.value.isFile()) {
    await copyFile(deps, srcParent, dstParent, name, st.value.ino, mode, stats, dstName);
  } else {
    stats.skipped++;
  }
  return stats;
}

async function copyLevel(
  deps: TreeCopyDeps,
  srcFd: number,
  dstFd: number,
  mode: CheckpointCopyMode,
  signal: AbortSignal,
  stats: TreeStats,
  depth: number,
  base?: number,
): Promise<void> {
  if (depth > deps.maxDepth) throw tooBig("maxDepth", deps.maxDepth);
  for (const { name, kind } of listKinds(srcFd, stats, deps.maxEntries)) {
    signal.throwIfAborted();
    // d_type says what the entry is, so only a filesystem that does not say costs an lstat.
    let known = kind;
    if (known === "unknown") {
      const st = deps.sys.lstatAt(srcFd, name);
      if (!st.ok) {
        if (st.errno === Errno.ENOENT) continue;
        throw errnoError(st.errno, { op: "checkpoint", path: printable(name) });
      }
      known = st.value.isDirectory() ? "dir" : st.value.isFile() ? "file" : "other";
    }
    if (known === "dir") {
      await copyDirectory(deps, srcFd, dstFd, name, mode, signal, stats, depth, name, base);
    } else if (known === "file") {
      await copyFile(deps, srcFd, dstFd, name, undefined, mode, stats, name, base);
    } else {
      stats.skipped++;
    }
  }
}

/** The entries of `dirFd` with their kinds; past `maxEntries` in the whole walk: too big. */
export function listKinds(dirFd: number, stats: TreeStats, maxEntries: number): ListedEntry[] {
  const seen = stats.files + stats.dirs + stats.skipped;
  let listed: ReturnType<typeof listEntries>;
  try {
    listed = listEntries(dirFd, Math.max(maxEntries - seen, 0));
  } catch (err) {
    throw errnoError(errnoOf(err), { op: "checkpoint", path: "" });
  }
  if (listed.truncated) throw tooBig("maxEntries", maxEntries);
  return listed.entries;
}

async function copyDirectory(
  deps: TreeCopyDeps,
  srcParent: number,
  dstParent: number,
  name: Buffer,
  mode: CheckpointCopyMode,
  signal: AbortSignal,
  stats: TreeStats,
  depth: number,
  dstName: Buffer = name,
  baseParent?: number,
): Promise<void> {
  const src = deps.sys.openat(srcParent, name, DIR_FLAGS);
  if (!src.ok) {
    // Swapped for a symlink or a file since the lstat: skipped, never followed.
    stats.skipped++;
    return;
  }
  try {
    const made = deps.sys.mkdirat(dstParent, dstName, 0o700);
    if (!made.ok) throw errnoError(made.errno, { op: "checkpoint", path: printable(name) });
    const dst = deps.sys.openat(dstParent, dstName, DIR_FLAGS);
    if (!dst.ok) throw errnoError(dst.errno, { op: "checkpoint", path: printable(name) });
    const base =
      baseParent === undefined ? undefined : deps.sys.openat(baseParent, name, DIR_FLAGS);
    try {
      stats.dirs++;
      const baseFd = base?.ok ? base.value : undefined;
      await copyLevel(deps, src.value, dst.value, mode, signal, stats, depth + 1, baseFd);
      finishDirectory(deps, dst.value, fstatSync(src.value, { bigint: true }));
    } finally {
      deps.sys.close(dst.value);
      if (base?.ok) deps.sys.close(base.value);
    }
  } finally {
    deps.sys.close(src.value);
  }
}

async function copyFile(
  deps: TreeCopyDeps,
  srcParent: number,
  dstParent: number,
  name: Buffer,
  ino: number | undefined,
  mode: CheckpointCopyMode,
  stats: TreeStats,
  dstName: Buffer = name,
  base?: number,
): Promise<void> {
  // Unchanged since the previous checkpoint: a link, decided from two lstats without
  // opening the file (decision 0171).
  if (base !== undefined && deps.owner === undefined) {
    const linked = linkUnchanged(deps, base, srcParent, name, dstParent, dstName);
    if (linked !== undefined) {
      stats.files++;
      stats.bytes += linked;
      return;
    }
  }
  const src = deps.sys.openat(srcParent, name, FILE_READ_FLAGS);
  if (!src.ok) {
    stats.skipped++;
    return;
  }
  try {
    const st = fstatSync(src.value, { bigint: true });
    // O_NOFOLLOW refuses a final symlink; a FIFO or device swapped in after the listing
    // opens (O_NONBLOCK keeps it from blocking) but is not a regular file, or not the inode
    // an lstat saw.
    if (!st.isFile() || (ino !== undefined && Number(st.ino) !== ino)) {
      stats.skipped++;
      return;
    }
    const dst = deps.sys.openat(dstParent, dstName, FILE_CREATE_FLAGS, 0o600);
    if (!dst.ok) throw errnoError(dst.errno, { op: "checkpoint", path: printable(name) });
    try {
      await copyContent(deps, src.value, dst.value, Number(st.size), mode);
      finishEntry(deps, dst.value, st);
    } finally {
      deps.sys.close(dst.value);
    }
    stats.files++;
    stats.bytes += Number(st.size);
  } finally {
    deps.sys.close(src.value);
  }
}

async function copyContent(
  deps: TreeCopyDeps,
  srcFd: number,
  dstFd: number,
  size: number,
  mode: CheckpointCopyMode,
): Promise<void> {
  if (mode === "reflink" && size > 0) {
    const cloned = deps.cp.clone(srcFd, dstFd);
    if (cloned.ok) return;
    if (!NO_CLONE.has(cloned.errno)) throw errnoError(cloned.errno, { op: "clone", path: "" });
  }
  if (await copyInKernel(deps, srcFd, dstFd, size)) return;
  for (let position = 0; position < size; ) {
    const chunk = await readAt(srcFd, Math.min(COPY_CHUNK_BYTES, size - position), position);
    if (chunk.length === 0) break; // shrank under us: the copy is what was there
    await writeFully(dstFd, chunk, position);
    position += chunk.length;
  }
}

/**
 * copy_file_range in chunks of COPY_CHUNK_BYTES, yielding to the event loop between them (the
 * call is synchronous). False when the kernel refuses before anything was copied (EXDEV on
 * old kernels, ENOSYS, EINVAL on some filesystems): the caller then copies the bytes itself.
 */
async function copyInKernel(
  deps: TreeCopyDeps,
  srcFd: number,
  dstFd: number,
  size: number,
): Promise<boolean> {
  let copied = 0;
  while (copied < size) {
    const step = deps.cp.copyRange(srcFd, dstFd, Math.min(COPY_CHUNK_BYTES * 8, size - copied));
    if (!step.ok) {
      if (copied === 0 && NO_COPY_RANGE.has(step.errno)) return false;
      throw errnoError(step.errno, { op: "checkpoint", path: "" });
    }
    if (step.value === 0) break; // shrank under us: the copy is what was there
    copied += step.value;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return true;
}

/**
 * Links the previous checkpoint's copy of a file into the new one when the file has not
 * changed since that copy was made (docs/decisions/0162): same size, kept mode bits and
 * nanosecond mtime, and the source's ctime strictly older than the copy's (the kernel sets
 * ctime on every write, chmod, utimes, rename and link; the same rule as a restore's
 * difference, decision 0155). Checkpoints are never written after they are taken, so two
 * of them may share the inode. Both sides are lstat'ed by name in their held directories
 * (nothing followed, nothing opened: decision 0171); the Workdir does not change meanwhile
 * because the checkpoint holds its Execution Lease. Answers the linked file's size, or
 * undefined when it must be copied (changed, not a regular file, or the base's name gone).
 */
function linkUnchanged(
  deps: TreeCopyDeps,
  base: number,
  srcParent: number,
  name: Buffer,
  dstParent: number,
  dstName: Buffer,
): number | undefined {
  const st = lstatNs(deps, srcParent, name);
  if (st === undefined || !st.isFile()) return undefined;
  const previous = lstatNs(deps, base, name);
  if (
    previous === undefined ||
    !previous.isFile() ||
    previous.size !== st.size ||
    (previous.mode & 0o7777n) !== (st.mode & BigInt(KEPT_MODE_BITS)) ||
    previous.mtimeNs !== st.mtimeNs ||
    !(st.ctimeNs < previous.ctimeNs)
  ) {
    return undefined;
  }
  return deps.sys.linkat(base, name, dstParent, dstName, 0).ok ? Number(st.size) : undefined;
}

/** Gives a copied directory its source's mode, owner and times (after its children). */
export function finishDirectory(deps: TreeCopyDeps, fd: number, st: BigIntStats): void {
  finishEntry(deps, fd, st);
}

function finishEntry(deps: TreeCopyDeps, fd: number, st: BigIntStats): void {
  const errCtx = { op: "checkpoint", path: "" };
  if (deps.owner !== undefined) {
    const owned = deps.sys.fchown(fd, deps.owner.uid, deps.owner.gid);
    if (!owned.ok) throw errnoError(owned.errno, errCtx);
  }
  const moded = deps.sys.fchmod(fd, Number(st.mode) & KEPT_MODE_BITS);
  if (!moded.ok) throw errnoError(moded.errno, errCtx);
  const timed = deps.cp.setTimes(fd, st.atimeNs, st.mtimeNs);
  if (!timed.ok) throw errnoError(timed.errno, errCtx);
}

function errnoOf(err: unknown): number {
  const code = (err as NodeJS.ErrnoException).code;
  const errno = code === undefined ? undefined : (Errno as Record<string, number>)[code];
  return errno ?? Errno.EIO;
}

function tooBig(limit: string, value: number): WorkcellError {
  return new WorkcellError(
    "payload_too_large",
    "The Workdir has more entries or levels than a checkpoint takes: remove some first.",
    { details: { limit, value } },
  );
}

function printable(name: SysPath): string {
  return typeof name === "string" ? name : name.toString("utf8");
}
