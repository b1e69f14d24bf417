import { type EntryInfo, entryInfoOf } from "./entry-kind.ts";
import {
  type ErrnoErrorContext,
  errnoError,
  type LookupErrorOptions,
  lookupError,
} from "./errno-error.ts";
import {
  displayPath,
  type FsContext,
  finishNewEntry,
  fstatOrThrow,
  openParent,
  withFd,
} from "./fs-context.ts";
import { Errno, O_DIRECTORY, O_PATH, O_RDONLY, type SysResult } from "./syscalls.ts";
import { DIR_MODE } from "./workspace-limits.ts";

export interface MakeDirectoryOptions {
  /** Create missing parents too (each 0700); the last name must still be new. */
  readonly parents?: boolean;
  readonly signal?: AbortSignal;
}

/**
 * Creates one directory; an existing entry of any kind (even a dangling symlink) is a
 * conflict, because mkdirat never follows the name it creates.
 */
export function makeDirectory(
  ctx: FsContext,
  rootFd: number,
  names: readonly string[],
  options: MakeDirectoryOptions = {},
): EntryInfo {
  options.signal?.throwIfAborted();
  const errCtx = { op: "mkdir", path: displayPath(names) };
  if (names.length === 0) throw errnoError(Errno.EEXIST, errCtx);
  const parent = options.parents
    ? {
        fd: ensureDirectory(ctx, rootFd, names.slice(0, -1), errCtx, {
          finalFileCode: "not_found",
        }),
        name: names[names.length - 1] as string,
      }
    : openParent(ctx, rootFd, names, errCtx);
  return withFd(ctx, parent.fd, (parentFd) => {
    const made = ctx.sys.mkdirat(parentFd, parent.name, DIR_MODE);
    if (!made.ok) throw errnoError(made.errno, errCtx);
    const fd = openNewDirectory(ctx, parentFd, parent.name, errCtx);
    return withFd(ctx, fd, () => entryInfoOf(parent.name, fstatOrThrow(ctx, fd, errCtx)));
  });
}

/**
 * `mkdir -p` below `dirfd`, one no-follow step per name: existing real directories are
 * entered, missing ones created 0700 (exact, via fchmod) and chowned to the owner; a symlink
 * on the way is forbidden, a file on the way is `options.finalFileCode` (or not_found when
 * it is not the last name). Returns an O_PATH descriptor of the last directory (or a
 * duplicate of `dirfd` when `names` is empty); the caller closes it.
 */
export function ensureDirectory(
  ctx: FsContext,
  dirfd: number,
  names: readonly string[],
  errCtx: ErrnoErrorContext,
  options: LookupErrorOptions & {
    /** Creates the last directory instead of mkdirat (a Workdir as a btrfs subvolume). */
    readonly makeLast?: (parentFd: number, name: string) => SysResult<true>;
  },
): number {
  if (names.length === 0) {
    const self = ctx.resolver.open(dirfd, [], O_PATH | O_DIRECTORY);
    if (!self.ok) throw errnoError(self.errno, errCtx);
    return self.value;
  }
  let current = dirfd;
  try {
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      const lookup: LookupErrorOptions =
        i === names.length - 1 ? options : { finalFileCode: "not_found" };
      let next = ctx.resolver.open(current, [name], O_PATH | O_DIRECTORY);
      if (!next.ok && next.errno === Errno.ENOENT) {
        const made =
          i === names.length - 1 && options.makeLast !== undefined
            ? options.makeLast(current, name)
            : ctx.sys.mkdirat(current, name, DIR_MODE);
        if (made.ok) {
          next = { ok: true, value: openNewDirectory(ctx, current, name, errCtx) };
        } else if (made.errno === Errno.EEXIST) {
          // Lost a race with a concurrent creator: use what is there now, no-follow again.
          next = ctx.resolver.open(current, [name], O_PATH | O_DIRECTORY);
        } else {
          throw errnoError(made.errno, errCtx);
        }
      }
      if (!next.ok) throw lookupError(ctx.sys, current, [name], next.errno, errCtx, lookup);
      if (current !== dirfd) ctx.sys.close(current);
      current = next.value;
    }
    const result = current;
    current = dirfd;
    return result;
  } finally {
    if (current !== dirfd) ctx.sys.close(current);
  }
}

/**
 * Opens a directory we just created (no-follow: if it was swapped for a symlink in the
 * meantime this fails) and gives it its exact mode and owner.
 */
function openNewDirectory(
  ctx: FsContext,
  parentFd: number,
  name: string,
  errCtx: ErrnoErrorContext,
): number {
  const opened = ctx.resolver.open(parentFd, [name], O_RDONLY | O_DIRECTORY);
  if (!opened.ok) {
    throw lookupError(ctx.sys, parentFd, [name], opened.errno, errCtx, {
      finalFileCode: "not_found",
    });
  }
  try {
    finishNewEntry(ctx, opened.value, DIR_MODE, errCtx);
  } catch (err) {
    ctx.sys.close(opened.value);
    throw err;
  }
  return opened.value;
}
