import { randomBytes } from "node:crypto";
import type { Stats } from "node:fs";
import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import {
  AT_FDCWD,
  AT_REMOVEDIR,
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  RENAME_NOREPLACE,
  type SysPath,
} from "../workspace/syscalls.ts";

/**
 * The skills part of the data root (docs/architecture.md §6):
 *
 *   <data-root>/skills/sources/<slug>/                 the source store (builtin + shared)
 *   <data-root>/skills/projections/<uid dirname>/      a user's read-only projection
 *   <data-root>/skills/projections/<uid dirname>.lock  its flock
 *   <data-root>/skills/projections/<uid dirname>.state what the last refresh projected
 *
 * Only `<uid dirname>/` is ever mounted into a sandbox, so the lock and state files beside
 * it are invisible to agents.
 */
export const SKILLS_DIR = "skills";
export const SOURCES_DIR = "sources";
export const PROJECTIONS_DIR = "projections";
export const LOCK_SUFFIX = ".lock";
export const STATE_SUFFIX = ".state";

/** Projected and stored skill files: everyone may read, nobody may write (0444 / 0555). */
export const SKILL_FILE_MODE = 0o444;
export const SKILL_EXEC_FILE_MODE = 0o555;
export const SKILL_DIR_MODE = 0o555;
/**
 * A tree under construction is private (0700 dirs, 0600 files) until it is complete, so a
 * sandbox listing its projection mid-refresh cannot read a half-copied temp directory.
 */
export const BUILD_DIR_MODE = 0o700;
export const BUILD_FILE_MODE = 0o600;
/** skills/, sources/, projections/ and each projection root: written only by agent-host. */
export const HOST_DIR_MODE = 0o755;

/**
 * Temp directories live beside their target (same filesystem, so the final rename is
 * atomic). The leading dot can never start a slug, so a temp name never collides with a
 * skill, and a refresh removes any left behind by a crashed one (it is not a granted slug).
 */
export const TEMP_PREFIX = ".wc-skill-tmp-";

/** renameat2(2) flag: atomically exchange the two names (Linux 3.15+, local filesystems). */
export const RENAME_EXCHANGE = 2;

/** Upper bound on entries a recursive removal visits: projections are ours, but never loop forever. */
export const MAX_REMOVE_ENTRIES = 1_000_000;
/** Deepest level a recursive removal enters (one descriptor is held per level). */
export const MAX_REMOVE_DEPTH = 256;

const ERRNO_NAMES = new Map<number, string>(
  Object.entries(Errno).map(([name, value]) => [value, name] as const),
);

export function errnoName(errno: number): string {
  return ERRNO_NAMES.get(errno) ?? `errno ${errno}`;
}

/**
 * The error for a failed syscall on agent-host's own skill directories. These are not user
 * paths: apart from a symlink (which only an attack or a bug can put there) every failure
 * is internal, and its message is for operators.
 */
export function skillFsError(op: string, path: string, errno: number): WorkcellError {
  if (errno === Errno.ELOOP) return domainError("symlink_refused", { details: { op, path } });
  return new WorkcellError("internal", `skills: ${op} '${path}' failed: ${errnoName(errno)}`, {
    details: { op, path, errno },
  });
}

export function tempName(): string {
  return TEMP_PREFIX + randomBytes(8).toString("hex");
}

export function isTempName(name: string): boolean {
  return name.startsWith(TEMP_PREFIX);
}

/** Opens child `name` of `dirfd` as a real directory for reading: a symlink fails (ELOOP). */
export function openDirAt(sys: FsSyscalls, dirfd: number, name: SysPath) {
  return sys.openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/**
 * Opens child `name` of `dirfd` as a real directory, creating it with exactly `mode` when
 * missing. A symlink or a file at the name is refused, never followed or replaced.
 */
export function ensureDirAt(sys: FsSyscalls, dirfd: number, name: string, mode: number): number {
  const made = sys.mkdirat(dirfd, name, mode);
  if (!made.ok && made.errno !== Errno.EEXIST) throw skillFsError("mkdir", name, made.errno);
  const opened = openDirAt(sys, dirfd, name);
  if (!opened.ok) {
    const errno = opened.errno === Errno.ENOTDIR ? Errno.ELOOP : opened.errno;
    throw skillFsError("open", name, errno);
  }
  if (made.ok) {
    // mkdirat's mode is masked by the umask; fchmod makes it exact.
    const chmod = sys.fchmod(opened.value, mode);
    if (!chmod.ok) {
      sys.close(opened.value);
      throw skillFsError("chmod", name, chmod.errno);
    }
  }
  return opened.value;
}

/**
 * Opens `<data-root>/skills/<sub>`, creating the missing levels. The data root itself is
 * operator configuration and may be a symlink on purpose (an EFS mount); everything below
 * it is opened no-follow.
 */
export function openSkillsSubdir(
  sys: FsSyscalls,
  dataRoot: string,
  sub: typeof SOURCES_DIR | typeof PROJECTIONS_DIR,
): number {
  const root = sys.openat(AT_FDCWD, dataRoot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!root.ok) {
    throw new WorkcellError(
      "unavailable",
      "The data root cannot be opened: check the agent-host's DATA_ROOT setting.",
      { details: { errno: root.errno } },
    );
  }
  try {
    const skills = ensureDirAt(sys, root.value, SKILLS_DIR, HOST_DIR_MODE);
    try {
      return ensureDirAt(sys, skills, sub, HOST_DIR_MODE);
    } finally {
      sys.close(skills);
    }
  } finally {
    sys.close(root.value);
  }
}

/** lstat of one name in an open directory; undefined when it does not exist. */
export function lstatAt(sys: FsSyscalls, dirfd: number, name: SysPath): Stats | undefined {
  const st = sys.lstatAt(dirfd, name);
  if (st.ok) return st.value;
  if (st.errno === Errno.ENOENT) return undefined;
  throw skillFsError("lstat", String(name), st.errno);
}

/** fstat that throws. */
export function fstatFd(sys: FsSyscalls, fd: number, what: string): Stats {
  const st = sys.fstat(fd);
  if (st.ok) return st.value;
  throw skillFsError("fstat", what, st.errno);
}

/** Runs `fn` with `fd`, closing it afterwards whatever happens. */
export async function withFd<T>(
  sys: FsSyscalls,
  fd: number,
  fn: (fd: number) => Promise<T> | T,
): Promise<T> {
  try {
    return await fn(fd);
  } finally {
    sys.close(fd);
  }
}

/**
 * Removes `name` from `dirfd`, whatever it is, without ever following it: a symlink is
 * unlinked as a link, a FIFO or device is unlinked without being opened, a directory is
 * emptied bottom-up through descriptors opened no-follow. Missing is fine.
 *
 * Only for agent-host's own trees (projections, temp directories, replaced sources): the
 * UserWorkspace has its own, stricter delete in agent-host/workspace/.
 */
export function removeEntryAt(sys: FsSyscalls, dirfd: number, name: SysPath): void {
  removeAt(sys, dirfd, name, 0, { entries: 0 });
}

function removeAt(
  sys: FsSyscalls,
  dirfd: number,
  name: SysPath,
  depth: number,
  budget: { entries: number },
): void {
  const unlinked = sys.unlinkat(dirfd, name, 0);
  if (unlinked.ok || unlinked.errno === Errno.ENOENT) return;
  // EISDIR (Linux) or EPERM (POSIX) for a directory: empty it first.
  if (unlinked.errno !== Errno.EISDIR && unlinked.errno !== Errno.EPERM) {
    throw skillFsError("unlink", String(name), unlinked.errno);
  }
  if (depth >= MAX_REMOVE_DEPTH) throw skillFsError("remove", String(name), Errno.ELOOP);
  const dir = openDirAt(sys, dirfd, name);
  if (!dir.ok) {
    if (dir.errno === Errno.ENOENT) return;
    // Replaced by a link or a file since the unlink attempt: remove that, as a link.
    if (dir.errno === Errno.ELOOP || dir.errno === Errno.ENOTDIR) {
      const again = sys.unlinkat(dirfd, name, 0);
      if (again.ok || again.errno === Errno.ENOENT) return;
    }
    throw skillFsError("open", String(name), dir.errno);
  }
  try {
    // Read-only trees (0555) cannot be emptied by a non-root owner until they are writable
    // again; as root this is a no-op. The descriptor is the directory we opened no-follow.
    sys.fchmod(dir.value, BUILD_DIR_MODE);
    for (;;) {
      const listed = sys.readdirAt(dir.value, 1024);
      if (!listed.ok) throw skillFsError("readdir", String(name), listed.errno);
      if (listed.value.names.length === 0) break;
      for (const child of listed.value.names) {
        budget.entries++;
        if (budget.entries > MAX_REMOVE_ENTRIES) {
          throw skillFsError("remove", String(name), Errno.E2BIG);
        }
        removeAt(sys, dir.value, child, depth + 1, budget);
      }
    }
  } finally {
    sys.close(dir.value);
  }
  const removed = sys.unlinkat(dirfd, name, AT_REMOVEDIR);
  if (!removed.ok && removed.errno !== Errno.ENOENT) {
    throw skillFsError("rmdir", String(name), removed.errno);
  }
}

/** Like removeEntryAt, but never throws: for cleanup paths whose own error must not mask the first. */
export function removeQuietly(sys: FsSyscalls, dirfd: number, name: SysPath): void {
  try {
    removeEntryAt(sys, dirfd, name);
  } catch {
    // The next refresh removes anything that is not a granted slug, temp names included.
  }
}

/**
 * Puts the complete tree `fromName` (in `fromDir`) in place of `toName` (in `toDir`; both
 * on one filesystem, usually one directory).
 *
 * When `toName` exists, RENAME_EXCHANGE swaps the two atomically: a sandbox sees the old
 * tree or the new one, never neither; the old one is then at `fromName` for the caller to
 * remove. Filesystems without it (NFS answers EINVAL) fall back to two renames, with a
 * moment in which `toName` is missing: a missing skill is the safe direction of that gap.
 *
 * Returns whether an old tree now sits at `fromName`.
 */
export function swapInto(
  sys: FsSyscalls,
  fromDir: number,
  fromName: string,
  toDir: number,
  toName: string,
): boolean {
  const fresh = sys.renameat2(fromDir, fromName, toDir, toName, RENAME_NOREPLACE);
  if (fresh.ok) return false;
  if (fresh.errno === Errno.EEXIST || fresh.errno === Errno.ENOTEMPTY) {
    const swapped = sys.renameat2(fromDir, fromName, toDir, toName, RENAME_EXCHANGE);
    if (swapped.ok) return true;
    if (swapped.errno !== Errno.EINVAL && swapped.errno !== Errno.ENOSYS) {
      throw skillFsError("rename", toName, swapped.errno);
    }
  } else if (fresh.errno !== Errno.EINVAL && fresh.errno !== Errno.ENOSYS) {
    throw skillFsError("rename", toName, fresh.errno);
  }
  // No renameat2 flags here: move the old tree aside under a fresh temp name, then the new
  // one in, then hand the old one back at `fromName` for removal.
  const aside = tempName();
  const moved = sys.renameat2(toDir, toName, toDir, aside, 0);
  const hadOld = moved.ok;
  if (!moved.ok && moved.errno !== Errno.ENOENT) throw skillFsError("rename", toName, moved.errno);
  const placed = sys.renameat2(fromDir, fromName, toDir, toName, 0);
  if (!placed.ok) {
    if (hadOld) sys.renameat2(toDir, aside, toDir, toName, 0);
    throw skillFsError("rename", toName, placed.errno);
  }
  if (hadOld) {
    const back = sys.renameat2(toDir, aside, fromDir, fromName, 0);
    if (!back.ok) removeQuietly(sys, toDir, aside);
  }
  return hadOld;
}
