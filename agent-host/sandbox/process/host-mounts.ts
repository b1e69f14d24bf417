import { errno as lastErrno, load } from "koffi";

// mount(2) called from agent-host itself (through koffi, as agent-host/workspace/ reaches
// openat2), instead of a util-linux `mount` process per mount: a process-tier generation
// makes up to six mounts at create, and each `mount` process (fork, exec, libmount
// reading fstab and mountinfo) cost tens of milliseconds on a loaded host (decision 0061).
// The calls are the ones `mount --no-canonicalize --bind` and `mount -t tmpfs` make; they
// are synchronous and take microseconds (no unmount, which waits for RCU: that stays a
// `umount` process, see generation-dirs.ts).

const MS_NOSUID = 0x2;
const MS_NODEV = 0x4;
const MS_BIND = 0x1000;

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
}

export class MountError extends Error {
  override readonly name = "MountError";
  readonly code: number;

  constructor(what: string, errno: number) {
    super(`${what} failed (errno ${errno})`);
    this.code = errno;
  }
}

/** HostMounts over glibc's mount(2); the library is bound once per call. */
export function createHostMounts(libraryPath: string = DEFAULT_LIBC_PATH): HostMounts {
  const lib = load(libraryPath);
  const mountFn = lib.func(
    "int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const char *data)",
  );
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
  };
}
