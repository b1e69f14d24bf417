import { errno as lastErrno, load } from "koffi";

// mount(2) and umount2(2) called from agent-host itself (through koffi, as
// agent-host/workspace/ reaches openat2), instead of a util-linux `mount` or `umount`
// process per call: each such process is a fork of agent-host, which blocks the event loop
// in proportion to its memory (44 ms at 750 MB; issue 41), and then costs a fork, an exec
// and libmount reading fstab and mountinfo (decision 0061). Both tiers use them: the
// process tier's generations (generation-dirs.ts) and the container tier's staged binds
// (staged-binds.ts). The mounts are the ones `mount --no-canonicalize --bind` and
// `mount -t tmpfs` make; they are synchronous and take microseconds. An unmount waits for
// an RCU grace period (milliseconds on a loaded host), so it runs on a libuv worker thread
// (koffi's async call), never on the event loop (decision 0119).

const MS_NOSUID = 0x2;
const MS_NODEV = 0x4;
const MS_BIND = 0x1000;
const MNT_DETACH = 0x2;
/** Refuses a symlink as the target: the mount point itself is unmounted, never where it points. */
const UMOUNT_NOFOLLOW = 0x8;

export const DEFAULT_LIBC_PATH = "libc.so.6";

/** The two kinds of mount a generation makes on the host. */
export interface HostMounts {
  /**
   * Binds `source` (for example /proc/self/fd/<n>: the kernel binds the open directory
   * itself, no path is resolved again) onto `target`; not recursive, like `mount --bind`.
   */
  bind(source: string, target: string): void;
  /** A tmpfs on `target`, always nosuid and nodev, with tmpfs options such as `size=…,mode=…`. */
  tmpfs(target: string, options: string): void;
  /**
   * umount2(2) of the mount on `target`, off the event loop. `lazy` detaches it now and
   * lets the kernel finish once it is no longer busy (`umount --lazy`). Rejects with a
   * MountError carrying the errno (EINVAL: nothing is mounted there).
   */
  unmount(target: string, options?: { lazy?: boolean }): Promise<void>;
}

export class MountError extends Error {
  override readonly name = "MountError";
  readonly code: number;

  constructor(what: string, errno: number) {
    super(`${what} failed (errno ${errno})`);
    this.code = errno;
  }
}

/** HostMounts over glibc's mount(2) and umount2(2); the library is bound once per call. */
export function createHostMounts(libraryPath: string = DEFAULT_LIBC_PATH): HostMounts {
  const lib = load(libraryPath);
  const mountFn = lib.func(
    "int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const char *data)",
  );
  const umountFn = lib.func("int umount2(const char *target, int flags)");
  const call = (what: string, ...args: Parameters<typeof mountFn>) => {
    if (Number(mountFn(...args)) !== 0) throw new MountError(what, lastErrno());
  };
  return {
    bind(source, target) {
      call(`bind mount of ${source} on ${target}`, source, target, null, MS_BIND, null);
    },
    tmpfs(target, options) {
      call(`tmpfs mount on ${target}`, "tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, options);
    },
    unmount(target, options = {}) {
      const flags = UMOUNT_NOFOLLOW | (options.lazy ? MNT_DETACH : 0);
      return new Promise((resolve, reject) => {
        // koffi sets errno to the worker thread's for the callback's duration: read there.
        umountFn.async(target, flags, (error: unknown, rc: unknown) => {
          if (error) reject(error);
          else if (Number(rc) !== 0) reject(new MountError(`unmount of ${target}`, lastErrno()));
          else resolve();
        });
      });
    },
  };
}
