import { randomBytes } from "node:crypto";
import { fstatSync } from "node:fs";
import { errno as lastErrno, load } from "koffi";
import { DEFAULT_LIBC_PATH } from "../workspace/libc-syscalls.ts";
import {
  AT_FDCWD,
  AT_REMOVEDIR,
  type FsSyscalls,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  type SysResult,
  sysFail,
  sysOk,
} from "../workspace/syscalls.ts";

/**
 * btrfs subvolumes (docs/decisions/0190): on a btrfs data root each managed Workdir is a
 * subvolume, and a checkpoint of it is a read-only snapshot: one ioctl whatever the tree's
 * size, where a per-file copy creates every file again.
 */
export interface SubvolumeSyscalls {
  /** True when `dirFd` is the root directory of a btrfs subvolume (inode 256 on btrfs). */
  isSubvolume(dirFd: number): boolean;
  /** A new, empty subvolume `name` in the directory `parentFd` (it replaces mkdirat). */
  create(parentFd: number, name: string): SysResult<true>;
  /** A read-only snapshot of the subvolume `srcFd` as `name` in the directory `parentFd`. */
  snapshot(srcFd: number, parentFd: number, name: string): SysResult<true>;
  /** Deletes the subvolume `name` of `parentFd` with everything in it (root only). */
  destroy(parentFd: number, name: string): SysResult<true>;
}

// linux/btrfs.h: _IOW(0x94, nr, 4096-byte struct) on x86_64 and aarch64 alike.
const BTRFS_IOC_SUBVOL_CREATE = 0x5000940e;
const BTRFS_IOC_SNAP_DESTROY = 0x5000940f;
const BTRFS_IOC_SNAP_CREATE_V2 = 0x50009417;
const BTRFS_SUBVOL_RDONLY = 2n;
const BTRFS_SUPER_MAGIC = 0x9123683en;
/** The root directory of every subvolume (BTRFS_FIRST_FREE_OBJECTID). */
const SUBVOLUME_ROOT_INO = 256n;
/**
 * What a snapshot shows where the source held a nested subvolume: an empty directory with
 * this inode (BTRFS_EMPTY_SUBVOL_DIR_OBJECTID). Its files are not in the snapshot.
 */
export const EMPTY_SUBVOLUME_STAND_IN_INO = 2n;
/** struct btrfs_ioctl_vol_args: `__s64 fd; char name[4088]`. */
const VOL_ARGS_NAME_AT = 8;
/** struct btrfs_ioctl_vol_args_v2: fd, transid, flags, a 32-byte union, then the name. */
const VOL_ARGS_V2_FLAGS_AT = 16;
const VOL_ARGS_V2_NAME_AT = 56;
const VOL_ARGS_BYTES = 4096;
const NAME_MAX = 255;

/** The ioctls over glibc through koffi; `sys` reopens directories (the workspace's calls). */
export function createSubvolumeSyscalls(
  sys: Pick<FsSyscalls, "openat" | "close">,
  libraryPath: string = DEFAULT_LIBC_PATH,
): SubvolumeSyscalls {
  const lib = load(libraryPath);
  const ioctl = lib.func("int ioctl(int fd, unsigned long request, void *arg)");
  const fstatfs = lib.func("int fstatfs(int fd, void *buf)");
  // An ioctl needs a descriptor opened for reading: the workspace walks hold O_PATH ones,
  // so the directory is opened again through its own descriptor (".", nothing to follow).
  const call = (fd: number, request: number, args: Buffer): SysResult<true> => {
    const dir = sys.openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!dir.ok) return dir;
    try {
      return Number(ioctl(dir.value, request, args)) === -1 ? sysFail(lastErrno()) : sysOk(true);
    } finally {
      sys.close(dir.value);
    }
  };
  return {
    isSubvolume(dirFd) {
      // struct statfs: f_type is the first field, a long (x86_64 and aarch64).
      const fs = Buffer.alloc(120);
      if (Number(fstatfs(dirFd, fs)) === -1) return false;
      if (fs.readBigUInt64LE(0) !== BTRFS_SUPER_MAGIC) return false;
      return fstatSync(dirFd, { bigint: true }).ino === SUBVOLUME_ROOT_INO;
    },
    create(parentFd, name) {
      return call(parentFd, BTRFS_IOC_SUBVOL_CREATE, volArgs(VOL_ARGS_NAME_AT, name));
    },
    snapshot(srcFd, parentFd, name) {
      const args = volArgs(VOL_ARGS_V2_NAME_AT, name);
      args.writeBigInt64LE(BigInt(srcFd), 0);
      args.writeBigUInt64LE(BTRFS_SUBVOL_RDONLY, VOL_ARGS_V2_FLAGS_AT);
      return call(parentFd, BTRFS_IOC_SNAP_CREATE_V2, args);
    },
    destroy(parentFd, name) {
      return call(parentFd, BTRFS_IOC_SNAP_DESTROY, volArgs(VOL_ARGS_NAME_AT, name));
    },
  };
}

/** A zeroed argument struct with the NUL-terminated `name` at `nameAt` (one entry name). */
function volArgs(nameAt: number, name: string): Buffer {
  const bytes = Buffer.from(name);
  if (bytes.length === 0 || bytes.length > NAME_MAX || name.includes("/") || name.includes("\0")) {
    throw new Error(`not one entry name: ${JSON.stringify(name)}`);
  }
  const args = Buffer.alloc(VOL_ARGS_BYTES);
  bytes.copy(args, nameAt);
  return args;
}

/**
 * The node's subvolume calls when its data root is btrfs and a subvolume can be made and
 * deleted in `<data-root>/<probeDir>/` (created 0700), else undefined: Workdirs are then
 * plain directories and checkpoints copy per file.
 */
export function detectSubvolumes(
  deps: { readonly dataRoot: string; readonly sys: FsSyscalls },
  probeDir: string,
): SubvolumeSyscalls | undefined {
  const { sys } = deps;
  const root = sys.openat(AT_FDCWD, deps.dataRoot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!root.ok) return undefined;
  try {
    sys.mkdirat(root.value, probeDir, 0o700);
    const dir = sys.openat(root.value, probeDir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (!dir.ok) return undefined;
    try {
      const subvolumes = createSubvolumeSyscalls(sys);
      const name = `.probe-subvolume-${randomBytes(6).toString("hex")}`;
      if (!subvolumes.create(dir.value, name).ok) return undefined;
      if (subvolumes.destroy(dir.value, name).ok) return subvolumes;
      // Made but not deletable (no CAP_SYS_ADMIN): an empty one goes with rmdir, and a
      // node that could not delete its snapshots takes none.
      sys.unlinkat(dir.value, name, AT_REMOVEDIR);
      return undefined;
    } finally {
      sys.close(dir.value);
    }
  } finally {
    sys.close(root.value);
  }
}

/** WORKDIR_SUBVOLUMES: `auto` makes new Workdirs subvolumes where the data root has them. */
export type WorkdirSubvolumes = "auto" | "off";

/**
 * What createUserWorkspaces needs to make each new managed Workdir a subvolume: nothing
 * (mkdirat) where the data root has none or the operator said `off`. `off` decides only
 * that: the checkpoint store keeps its subvolume calls, so it still snapshots a Workdir that
 * already is one and destroys the snapshots it holds (a snapshot cannot be removed file by
 * file: it is read-only).
 */
export function subvolumeWorkdirs(
  setting: WorkdirSubvolumes,
  subvolumes: SubvolumeSyscalls | undefined,
): { makeWorkdir?: (parentFd: number, name: string) => SysResult<true> } {
  if (setting === "off" || subvolumes === undefined) return {};
  return { makeWorkdir: (parentFd, name) => subvolumes.create(parentFd, name) };
}
