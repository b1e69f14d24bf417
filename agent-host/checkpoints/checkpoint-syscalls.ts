import { errno as lastErrno, load } from "koffi";
import { DEFAULT_LIBC_PATH } from "../workspace/libc-syscalls.ts";
import { type SysResult, sysFail, sysOk } from "../workspace/syscalls.ts";

/**
 * FICLONE, `_IOW(0x94, 9, int)`: the same value on x86_64 and aarch64. It makes the
 * destination share the source's extents (XFS with reflink=1, btrfs): a copy that costs
 * metadata only, and diverges block by block on the next write to either side.
 */
export const FICLONE = 0x40049409;

/** How a node copies checkpoint files (reported in GET /v1/admin/runtime). */
export type CheckpointCopyMode = "reflink" | "copy";

/** The two calls checkpoints need beyond the workspace layer's FsSyscalls. */
export interface CheckpointSyscalls {
  /** Clones `srcFd`'s whole content into the empty `dstFd` (both regular files). */
  clone(srcFd: number, dstFd: number): SysResult<true>;
  /**
   * futimens(2) with nanoseconds: Node's futimes takes seconds as a double, which loses the
   * last digits, and a restore must give back mtimes exactly.
   */
  setTimes(fd: number, atimeNs: bigint, mtimeNs: bigint): SysResult<true>;
  /**
   * copy_file_range(2) of up to `length` bytes at both descriptors' file offsets: the
   * kernel copies (and may share or offload) without the bytes passing through us.
   * Returns the bytes copied, 0 at the end of the source.
   */
  copyRange(srcFd: number, dstFd: number, length: number): SysResult<number>;
  /**
   * statx(2) of `name` inside the held directory `dirFd`, not following a final symlink,
   * with nanosecond times: one system call, where an lstat through /proc/self/fd walks the
   * magic link first (decision 0172). `name` is one entry name (the caller checks it).
   */
  statAt?(dirFd: number, name: Buffer): SysResult<NsStat>;
}

/** What the checkpoint walks read of an inode (a BigIntStats has all of it too). */
export interface NsStat {
  isFile(): boolean;
  isDirectory(): boolean;
  readonly ino: bigint;
  readonly size: bigint;
  readonly mode: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
}

const AT_SYMLINK_NOFOLLOW = 0x100;
const AT_NO_AUTOMOUNT = 0x800;
const STATX_BASIC_STATS = 0x7ff;
const S_IFMT = 0o170000n;
const S_IFREG = 0o100000n;
const S_IFDIR = 0o040000n;
const NUL = Buffer.from([0]);

const NS_PER_S = 1_000_000_000n;

/**
 * CheckpointSyscalls over glibc through koffi, like the workspace syscalls. FICLONE answers
 * EOPNOTSUPP / EINVAL where the filesystem cannot share extents and EXDEV across
 * filesystems: the caller then copies the bytes.
 */
export function createCheckpointSyscalls(
  libraryPath: string = DEFAULT_LIBC_PATH,
): CheckpointSyscalls {
  const lib = load(libraryPath);
  const ioctl = lib.func("int ioctl(int fd, unsigned long request, int src)");
  const futimens = lib.func("int futimens(int fd, const void *times)");
  const statx = lib.func(
    "int statx(int dirfd, const void *path, int flags, unsigned int mask, void *buf)",
  );
  const copyFileRange = lib.func(
    "int64_t copy_file_range(int fd_in, void *off_in, int fd_out, void *off_out, size_t len, unsigned int flags)",
  );
  return {
    clone(srcFd, dstFd) {
      return Number(ioctl(dstFd, FICLONE, srcFd)) === -1 ? sysFail(lastErrno()) : sysOk(true);
    },
    setTimes(fd, atimeNs, mtimeNs) {
      // struct timespec[2]: {tv_sec, tv_nsec} as two 64-bit fields each (LP64).
      const times = Buffer.alloc(32);
      times.writeBigInt64LE(atimeNs / NS_PER_S, 0);
      times.writeBigInt64LE(atimeNs % NS_PER_S, 8);
      times.writeBigInt64LE(mtimeNs / NS_PER_S, 16);
      times.writeBigInt64LE(mtimeNs % NS_PER_S, 24);
      return Number(futimens(fd, times)) === -1 ? sysFail(lastErrno()) : sysOk(true);
    },
    statAt(dirFd, name) {
      const buf = Buffer.alloc(256);
      const flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT;
      const path = Buffer.concat([name, NUL]);
      if (Number(statx(dirFd, path, flags, STATX_BASIC_STATS, buf)) === -1) {
        return sysFail(lastErrno());
      }
      return sysOk(statxView(buf));
    },
    copyRange(srcFd, dstFd, length) {
      const copied = Number(copyFileRange(srcFd, null, dstFd, null, length, 0));
      return copied === -1 ? sysFail(lastErrno()) : sysOk(copied);
    },
  };
}

/** struct statx (linux/stat.h): the fields NsStat names, times as nanoseconds. */
function statxView(buf: Buffer): NsStat {
  const mode = BigInt(buf.readUInt16LE(28));
  const time = (at: number) => buf.readBigInt64LE(at) * NS_PER_S + BigInt(buf.readUInt32LE(at + 8));
  return {
    isFile: () => (mode & S_IFMT) === S_IFREG,
    isDirectory: () => (mode & S_IFMT) === S_IFDIR,
    ino: buf.readBigUInt64LE(32),
    size: buf.readBigUInt64LE(40),
    mode,
    ctimeNs: time(96),
    mtimeNs: time(112),
  };
}
