import { constants as fsConstants, type Stats } from "node:fs";
import { constants as osConstants } from "node:os";

/**
 * The syscall seam of the workspace layer: the handful of Linux `*at` calls Node does not
 * expose, plus the fd-based helpers the layer needs. Every call is relative to a directory
 * file descriptor, never to an absolute path, so a name is always looked up inside a
 * directory we already hold open: that is what makes the layer race-safe instead of
 * check-then-use.
 *
 * Failures are values (`{ ok: false, errno }`), not exceptions: the callers branch on the
 * errno (EEXIST means "pick another temp name", EINVAL from renameat2 means "this filesystem
 * has no RENAME_NOREPLACE"), and `errno-error.ts` turns the final one into a WorkcellError.
 */
export type SysResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly errno: number };

/** `struct open_how` of openat2(2). */
export interface OpenHow {
  readonly flags: number;
  readonly mode: number;
  readonly resolve: number;
}

/**
 * A name or path as a string (UTF-8) or as raw bytes: names read from a directory need not
 * be UTF-8, and a recursive delete must still be able to remove them.
 */
export type SysPath = string | Buffer;

export interface FsSyscalls {
  /** openat(2). */
  openat(dirfd: number, path: SysPath, flags: number, mode?: number): SysResult<number>;
  /** openat2(2) (Linux 5.6+); `{ ok: false, errno: ENOSYS }` where the kernel lacks it. */
  openat2(dirfd: number, path: string, how: OpenHow): SysResult<number>;
  /** mkdirat(2); the mode is still masked by the umask, callers fchmod to be exact. */
  mkdirat(dirfd: number, name: SysPath, mode: number): SysResult<true>;
  /** unlinkat(2); `AT_REMOVEDIR` for a directory. Never follows a symlink: it removes the link. */
  unlinkat(dirfd: number, name: SysPath, flags: number): SysResult<true>;
  /** renameat2(2); `RENAME_NOREPLACE` fails with EEXIST on any existing name, even a dangling link. */
  renameat2(
    oldDirfd: number,
    oldName: SysPath,
    newDirfd: number,
    newName: SysPath,
    flags: number,
  ): SysResult<true>;
  /** linkat(2) without AT_SYMLINK_FOLLOW: fails with EEXIST on any existing name. */
  linkat(
    oldDirfd: number,
    oldName: SysPath,
    newDirfd: number,
    newName: SysPath,
    flags: number,
  ): SysResult<true>;
  /** flock(2). Blocks the calling thread unless `LOCK_NB` is set: use LOCK_NB on the event loop. */
  flock(fd: number, operation: number): SysResult<true>;
  /** fstat(2); works on O_PATH descriptors. */
  fstat(fd: number): SysResult<Stats>;
  /** fchmod(2); not on O_PATH descriptors. */
  fchmod(fd: number, mode: number): SysResult<true>;
  /** fchown(2); not on O_PATH descriptors. */
  fchown(fd: number, uid: number, gid: number): SysResult<true>;
  /** lstat of one entry (a single name, no `/`) of an open directory; never follows it. */
  lstatAt(dirfd: number, name: SysPath): SysResult<Stats>;
  /**
   * Up to `maxEntries` raw entry names of an open directory (without `.` and `..`), as bytes
   * so that names which are not UTF-8 are seen, not mangled. `truncated` says there were more.
   */
  readdirAt(dirfd: number, maxEntries: number): SysResult<{ names: Buffer[]; truncated: boolean }>;
  /** Opens the inode an (O_PATH) descriptor refers to again, with new flags; no path lookup. */
  reopen(fd: number, flags: number): SysResult<number>;
  /** close(2); errors are ignored (the descriptor is gone either way on Linux). */
  close(fd: number): void;
}

// Open flags. Node's fs.constants carries the values for the running architecture (they
// differ between x86_64 and aarch64 for O_DIRECTORY / O_NOFOLLOW); O_PATH and O_CLOEXEC are
// not exported by Node but are the same on every Linux architecture we run on.
export const O_RDONLY = fsConstants.O_RDONLY;
export const O_WRONLY = fsConstants.O_WRONLY;
export const O_RDWR = fsConstants.O_RDWR;
export const O_CREAT = fsConstants.O_CREAT;
export const O_EXCL = fsConstants.O_EXCL;
export const O_TRUNC = fsConstants.O_TRUNC;
export const O_NONBLOCK = fsConstants.O_NONBLOCK;
export const O_DIRECTORY = fsConstants.O_DIRECTORY;
export const O_NOFOLLOW = fsConstants.O_NOFOLLOW;
export const O_NOCTTY = fsConstants.O_NOCTTY;
export const O_CLOEXEC = 0o2000000;
export const O_PATH = 0o10000000;

export const AT_FDCWD = -100;
export const AT_SYMLINK_NOFOLLOW = 0x100;
export const AT_REMOVEDIR = 0x200;

export const RESOLVE_NO_XDEV = 0x01;
export const RESOLVE_NO_MAGICLINKS = 0x02;
export const RESOLVE_NO_SYMLINKS = 0x04;
export const RESOLVE_BENEATH = 0x08;

export const RENAME_NOREPLACE = 1;

export const LOCK_SH = 1;
export const LOCK_EX = 2;
export const LOCK_NB = 4;
export const LOCK_UN = 8;

/** Errno values of the running platform, by name (Node's os.constants.errno). */
export const Errno = osConstants.errno;

export function sysOk<T>(value: T): SysResult<T> {
  return { ok: true, value };
}

export function sysFail<T = never>(errno: number): SysResult<T> {
  return { ok: false, errno };
}

/** Turns a Node fs exception into an errno (Node reports it negated in `err.errno`). */
export function errnoOfNodeError(err: unknown): number {
  if (typeof err === "object" && err !== null) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && code in Errno) return Errno[code as keyof typeof Errno];
    const errno = (err as { errno?: unknown }).errno;
    if (typeof errno === "number" && errno !== 0) return Math.abs(errno);
  }
  throw err;
}
