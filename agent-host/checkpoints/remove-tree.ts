import { errnoError } from "../workspace/errno-error.ts";
import {
  AT_REMOVEDIR,
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  type SysPath,
} from "../workspace/syscalls.ts";

/** How many names one pass lists; the directory is listed again until it is empty. */
const NAMES_PER_PASS = 4096;

/**
 * Removes `name` of `parentFd` and everything under it, descriptor-relative: directories are
 * entered O_NOFOLLOW, everything else is unlinked, which removes a symlink, a FIFO or a
 * device node as a name and never opens or follows it (unlike the workspace's deleteTree,
 * which refuses special files: a restore must be able to drop what the agent planted). A
 * missing name is not an error, so a repeat after a crash is harmless.
 */
export function removeTree(
  sys: FsSyscalls,
  parentFd: number,
  name: SysPath,
  maxDepth: number,
  depth = 1,
): void {
  const errCtx = { op: "remove", path: typeof name === "string" ? name : name.toString() };
  if (depth > maxDepth) throw errnoError(Errno.ELOOP, errCtx);
  const dir = sys.openat(parentFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (!dir.ok) {
    if (dir.errno === Errno.ENOENT) return;
    if (dir.errno !== Errno.ENOTDIR && dir.errno !== Errno.ELOOP) {
      throw errnoError(dir.errno, errCtx);
    }
    const unlinked = sys.unlinkat(parentFd, name, 0);
    if (!unlinked.ok && unlinked.errno !== Errno.ENOENT) throw errnoError(unlinked.errno, errCtx);
    return;
  }
  try {
    for (;;) {
      const listed = sys.readdirAt(dir.value, NAMES_PER_PASS);
      if (!listed.ok) throw errnoError(listed.errno, errCtx);
      if (listed.value.names.length === 0) break;
      for (const child of listed.value.names)
        removeTree(sys, dir.value, child, maxDepth, depth + 1);
    }
  } finally {
    sys.close(dir.value);
  }
  const removed = sys.unlinkat(parentFd, name, AT_REMOVEDIR);
  if (!removed.ok && removed.errno !== Errno.ENOENT) throw errnoError(removed.errno, errCtx);
}
