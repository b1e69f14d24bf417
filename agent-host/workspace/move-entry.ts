import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import { type EntryInfo, entryInfoOf, entryKindOf } from "./entry-kind.ts";
import { type ErrnoErrorContext, errnoError, notFound } from "./errno-error.ts";
import { displayPath, type FsContext, lstatName, openParent, withFd } from "./fs-context.ts";
import { Errno, RENAME_NOREPLACE } from "./syscalls.ts";

export interface MoveOptions {
  /** Replace an existing entry at the destination (a file, or an empty directory by a directory). */
  readonly overwrite?: boolean;
  readonly signal?: AbortSignal;
}

/**
 * Renames a regular file or real directory inside the bound directory. Both names are
 * looked up inside their parents' descriptors (no-follow), and rename(2) moves the entry
 * itself: nothing is followed, nothing is copied. A symlink or special file as the source is
 * refused, like everywhere in this layer. No-clobber uses RENAME_NOREPLACE; where the
 * filesystem lacks it (NFS, EINVAL), a file is moved with linkat + unlinkat (also
 * no-clobber) and a directory with check-then-rename, whose race can only replace an empty
 * directory the same user created in that instant.
 */
export function moveEntry(
  ctx: FsContext,
  rootFd: number,
  from: readonly string[],
  to: readonly string[],
  options: MoveOptions = {},
): EntryInfo {
  options.signal?.throwIfAborted();
  const errCtx = { op: "move", path: displayPath(from) };
  const destCtx = { op: "move", path: displayPath(to) };
  if (from.length === 0) throw rootRefused(errCtx);
  if (to.length === 0) throw errnoError(Errno.EEXIST, destCtx);
  const src = openParent(ctx, rootFd, from, errCtx);
  return withFd(ctx, src.fd, (srcFd) => {
    const dst = openParent(ctx, rootFd, to, destCtx);
    return withFd(ctx, dst.fd, (dstFd) => {
      const st = lstatName(ctx, srcFd, src.name, errCtx);
      if (st === undefined) throw notFound(errCtx);
      const kind = entryKindOf(st);
      if (kind === "symlink") throw domainError("symlink_refused", { details: { ...errCtx } });
      if (kind === "special") throw domainError("special_file_refused", { details: { ...errCtx } });
      rename(ctx, srcFd, src.name, dstFd, dst.name, kind === "dir", options, destCtx);
      return entryInfoOf(dst.name, st);
    });
  });
}

function rename(
  ctx: FsContext,
  srcFd: number,
  srcName: string,
  dstFd: number,
  dstName: string,
  isDir: boolean,
  options: MoveOptions,
  errCtx: ErrnoErrorContext,
): void {
  const flags = options.overwrite ? 0 : RENAME_NOREPLACE;
  const renamed = ctx.sys.renameat2(srcFd, srcName, dstFd, dstName, flags);
  if (renamed.ok) return;
  if (flags === 0 || (renamed.errno !== Errno.EINVAL && renamed.errno !== Errno.ENOSYS)) {
    throw moveError(renamed.errno, errCtx);
  }
  // EINVAL under RENAME_NOREPLACE: either the filesystem lacks the flag, or the move is
  // impossible (a directory into itself). Tell them apart by trying without it.
  if (lstatName(ctx, dstFd, dstName, errCtx) !== undefined) throw errnoError(Errno.EEXIST, errCtx);
  if (!isDir) {
    const linked = ctx.sys.linkat(srcFd, srcName, dstFd, dstName, 0);
    if (!linked.ok) throw moveError(linked.errno, errCtx);
    ctx.sys.unlinkat(srcFd, srcName, 0);
    return;
  }
  const plain = ctx.sys.renameat2(srcFd, srcName, dstFd, dstName, 0);
  if (!plain.ok) throw moveError(plain.errno, errCtx);
}

function moveError(errno: number, errCtx: ErrnoErrorContext): WorkcellError {
  // ENOTEMPTY / EISDIR / ENOTDIR here all mean "something incompatible is in the way".
  if (errno === Errno.ENOTEMPTY || errno === Errno.EISDIR || errno === Errno.ENOTDIR) {
    return errnoError(Errno.EEXIST, errCtx);
  }
  if (errno === Errno.EINVAL) {
    return new WorkcellError("invalid_request", "A directory cannot be moved into itself.", {
      details: { path: errCtx.path, op: errCtx.op, reason: "move_into_itself" },
    });
  }
  return errnoError(errno, errCtx);
}

function rootRefused(errCtx: ErrnoErrorContext): WorkcellError {
  return new WorkcellError("invalid_request", "The Workdir root cannot be moved.", {
    details: { path: errCtx.path, op: errCtx.op, reason: "workdir_root" },
  });
}
