import { setTimeout as sleep } from "node:timers/promises";
import {
  Errno,
  type FsSyscalls,
  LOCK_EX,
  LOCK_NB,
  LOCK_UN,
  O_CLOEXEC,
  O_CREAT,
  O_NOFOLLOW,
  O_NONBLOCK,
  O_RDWR,
} from "../workspace/syscalls.ts";
import { fstatFd, LOCK_SUFFIX, skillFsError } from "./skill-fs.ts";

/** Mode of a projection lock file: agent-host only. */
export const LOCK_FILE_MODE = 0o600;

export interface ProjectionLock {
  release(): void;
}

export interface LockProjectionOptions {
  readonly timeoutMs: number;
  readonly pollMs: number;
  readonly signal: AbortSignal;
}

/**
 * Takes the exclusive flock(2) on `<projections>/<uid dirname>.lock`, or returns
 * "timeout".
 *
 * A real flock, not an in-process mutex: two agent-host processes (on one node, or on two
 * nodes sharing the volume over NFSv4, where flock maps to a byte-range lock) serialize on
 * it. It complements the uid's Postgres advisory lock: that one orders refreshes against
 * grant changes; this one still protects the files if a refresh's database connection
 * drops (which releases the advisory lock) while it is copying.
 *
 * flock is asked non-blocking and retried: a blocking flock would freeze the whole event
 * loop (the seam's calls are synchronous), and a poll can honour the signal and a timeout.
 *
 * The lock file is never deleted: unlinking a lock file while others wait on it lets two
 * holders lock two different inodes. It is opened O_NOFOLLOW|O_NONBLOCK and must be a
 * regular file, so a planted symlink or FIFO at its name is refused, not followed.
 */
export async function lockProjection(
  sys: FsSyscalls,
  projectionsFd: number,
  dirname: string,
  options: LockProjectionOptions,
): Promise<ProjectionLock | "timeout"> {
  const name = dirname + LOCK_SUFFIX;
  const opened = sys.openat(
    projectionsFd,
    name,
    O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
    LOCK_FILE_MODE,
  );
  if (!opened.ok) throw skillFsError("open", name, opened.errno);
  const fd = opened.value;
  try {
    if (!fstatFd(sys, fd, name).isFile()) throw skillFsError("open", name, Errno.EINVAL);
    const deadline = Date.now() + options.timeoutMs;
    for (;;) {
      options.signal.throwIfAborted();
      const locked = sys.flock(fd, LOCK_EX | LOCK_NB);
      if (locked.ok) break;
      if (locked.errno !== Errno.EWOULDBLOCK && locked.errno !== Errno.EAGAIN) {
        if (locked.errno !== Errno.EINTR) throw skillFsError("flock", name, locked.errno);
      }
      if (Date.now() >= deadline) {
        sys.close(fd);
        return "timeout";
      }
      await sleep(options.pollMs, undefined, { signal: options.signal });
    }
  } catch (err) {
    sys.close(fd);
    throw err;
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      sys.flock(fd, LOCK_UN);
      // Closing the last descriptor releases the lock even if LOCK_UN failed.
      sys.close(fd);
    },
  };
}
