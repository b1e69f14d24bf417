import {
  closeSync,
  fchmodSync,
  fchownSync,
  fstatSync,
  lstatSync,
  opendirSync,
  openSync,
  type Stats,
} from "node:fs";
import { errno as lastErrno, load } from "koffi";
import {
  Errno,
  errnoOfNodeError,
  type FsSyscalls,
  type OpenHow,
  type SysPath,
  type SysResult,
  sysFail,
  sysOk,
} from "./syscalls.ts";

/**
 * openat2 has no glibc wrapper (glibc 2.36 on Debian 12), so it is reached through
 * syscall(2). Syscalls added since Linux 5.1 share one number on every architecture, so 437
 * holds on x86_64 and aarch64 alike.
 */
export const SYS_OPENAT2 = 437;

/** sizeof(struct open_how): three u64 (flags, mode, resolve). */
const OPEN_HOW_SIZE = 24;

export interface LibcSyscallsOptions {
  /** The C library to bind; glibc's soname by default. */
  readonly libraryPath?: string;
  /** Where the process's descriptors appear as magic links; only tests change it. */
  readonly procFdDir?: string;
}

/**
 * koffi passes a JS string to `const char *` as UTF-8 with a terminator; raw bytes (a name
 * read from a directory that is not UTF-8) travel as a Buffer, NUL-terminated here. A NUL
 * inside the bytes would silently shorten the name, so it is refused.
 */
function cPath(path: SysPath): string | Buffer {
  if (typeof path === "string") {
    if (path.includes("\u0000")) throw new Error("a path must not contain NUL");
    return path;
  }
  if (path.includes(0)) throw new Error("a path must not contain NUL");
  return Buffer.concat([path, NUL]);
}

const NUL = Buffer.from([0]);

export const DEFAULT_LIBC_PATH = "libc.so.6";
export const DEFAULT_PROC_FD_DIR = "/proc/self/fd";

/**
 * FsSyscalls over glibc through koffi (FFI, no compiler needed). The library is bound once
 * per call of this factory; the agent-host creates one at start and passes it down.
 *
 * errno is read with koffi's `errno()` immediately after the failing call, before any other
 * native call can overwrite it. All calls are synchronous: they are metadata operations that
 * take microseconds on a local disk; file contents go through Node's asynchronous fs on the
 * returned descriptors.
 */
export function createLibcSyscalls(options: LibcSyscallsOptions = {}): FsSyscalls {
  const lib = load(options.libraryPath ?? DEFAULT_LIBC_PATH);
  const procFdDir = options.procFdDir ?? DEFAULT_PROC_FD_DIR;
  const openat2Wired = process.arch === "x64" || process.arch === "arm64";

  const openatFn = lib.func("int openat(int dirfd, const char *path, int flags, uint32_t mode)");
  // Declared with fixed arguments rather than `...`: the kernel reads registers, and a fixed
  // prototype is both faster through koffi and identical at the ABI level for integer and
  // pointer arguments on x86_64 and aarch64.
  const syscall4 = lib.func("syscall", "long", ["long", "int", "const char *", "void *", "size_t"]);
  const mkdiratFn = lib.func("int mkdirat(int dirfd, const char *path, uint32_t mode)");
  const unlinkatFn = lib.func("int unlinkat(int dirfd, const char *path, int flags)");
  const renameat2Fn = lib.func(
    "int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags)",
  );
  const linkatFn = lib.func(
    "int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags)",
  );
  const flockFn = lib.func("int flock(int fd, int operation)");

  function check(rc: number | bigint): SysResult<true> {
    return Number(rc) === -1 ? sysFail(lastErrno()) : sysOk(true);
  }

  function checkFd(rc: number | bigint): SysResult<number> {
    const fd = Number(rc);
    return fd < 0 ? sysFail(lastErrno()) : sysOk(fd);
  }

  function viaNode<T>(fn: () => T): SysResult<T> {
    try {
      return sysOk(fn());
    } catch (err) {
      return sysFail(errnoOfNodeError(err));
    }
  }

  function entryPath(dirfd: number, name: SysPath): string | Buffer {
    // `name` is one component (no `/`): the magic link pins the directory we hold, and the
    // final component is looked up inside it without following it (lstat).
    const prefix = `${procFdDir}/${dirfd}/`;
    return typeof name === "string" ? prefix + name : Buffer.concat([Buffer.from(prefix), name]);
  }

  return {
    openat(dirfd, path, flags, mode = 0) {
      return checkFd(openatFn(dirfd, cPath(path), flags, mode));
    },

    openat2(dirfd, path, how: OpenHow) {
      const buf = Buffer.alloc(OPEN_HOW_SIZE);
      buf.writeBigUInt64LE(BigInt(how.flags), 0);
      buf.writeBigUInt64LE(BigInt(how.mode), 8);
      buf.writeBigUInt64LE(BigInt(how.resolve), 16);
      // Only wired where the syscall number is known; elsewhere behave like an old kernel
      // so the resolver falls back to the component walk.
      if (!openat2Wired) return sysFail(Errno.ENOSYS);
      return checkFd(syscall4(SYS_OPENAT2, dirfd, cPath(path), buf, OPEN_HOW_SIZE));
    },

    mkdirat(dirfd, name, mode) {
      return check(mkdiratFn(dirfd, cPath(name), mode));
    },

    unlinkat(dirfd, name, flags) {
      return check(unlinkatFn(dirfd, cPath(name), flags));
    },

    renameat2(oldDirfd, oldName, newDirfd, newName, flags) {
      return check(renameat2Fn(oldDirfd, cPath(oldName), newDirfd, cPath(newName), flags));
    },

    linkat(oldDirfd, oldName, newDirfd, newName, flags) {
      return check(linkatFn(oldDirfd, cPath(oldName), newDirfd, cPath(newName), flags));
    },

    flock(fd, operation) {
      return check(flockFn(fd, operation));
    },

    fstat(fd): SysResult<Stats> {
      return viaNode(() => fstatSync(fd));
    },

    fchmod(fd, mode) {
      return viaNode(() => {
        fchmodSync(fd, mode);
        return true as const;
      });
    },

    fchown(fd, uid, gid) {
      return viaNode(() => {
        fchownSync(fd, uid, gid);
        return true as const;
      });
    },

    lstatAt(dirfd, name) {
      // One name inside the held directory: `..` or a `/` would look elsewhere.
      const text = typeof name === "string" ? name : name.toString("latin1");
      if (text === "" || text === "." || text === ".." || text.includes("/")) {
        return sysFail(Errno.EINVAL);
      }
      return viaNode(() => lstatSync(entryPath(dirfd, name)));
    },

    readdirAt(dirfd, maxEntries) {
      return viaNode(() => {
        // opendir through the magic link reopens the directory we hold (no path lookup that
        // an attacker could redirect) and streams it, so a huge directory costs at most
        // maxEntries + 1 names of memory.
        // Node's types only admit text encodings here, but "buffer" works at runtime and
        // yields each name as raw bytes.
        const dir = opendirSync(`${procFdDir}/${dirfd}`, {
          encoding: "buffer" as BufferEncoding,
        });
        try {
          const names: Buffer[] = [];
          for (;;) {
            const entry = dir.readSync();
            if (entry === null) return { names, truncated: false };
            if (names.length >= maxEntries) return { names, truncated: true };
            names.push(entry.name as unknown as Buffer);
          }
        } finally {
          dir.closeSync();
        }
      });
    },

    reopen(fd, flags) {
      return viaNode(() => openSync(`${procFdDir}/${fd}`, flags));
    },

    close(fd) {
      try {
        closeSync(fd);
      } catch {
        // EBADF / EINTR: on Linux the descriptor is released either way.
      }
    },
  };
}
