import { type EntryInfo, entryInfoOf } from "./entry-kind.ts";
import {
  type ErrnoErrorContext,
  errnoError,
  isADirectory,
  mapNodeIoError,
  tooLarge,
} from "./errno-error.ts";
import { syncFd } from "./fd-io.ts";
import {
  createTempFile,
  displayPath,
  type FsContext,
  fstatOrThrow,
  lstatName,
  openParent,
} from "./fs-context.ts";
import { ensureDirectory } from "./make-directory.ts";
import { Errno, O_DIRECTORY, O_RDONLY, RENAME_NOREPLACE } from "./syscalls.ts";
import { pumpToFd, SourceTooLarge, type WriteSource } from "./write-source.ts";

export interface WriteOptions {
  /**
   * Replace an existing file. The new content is still written to a temp file and renamed
   * over the name, so the old inode is never modified (a hard link elsewhere keeps its
   * bytes) and a symlink at the name is replaced as a link, never followed. A directory at
   * the name is still a conflict. Default: no-clobber, any existing name is a conflict.
   */
  readonly overwrite?: boolean;
  /** Create missing parent directories (0700) first, e.g. `uploads/` on first use. */
  readonly parents?: boolean;
  /** Bytes allowed; more is payload_too_large and nothing is published. */
  readonly maxBytes?: number;
  /** Flush file data and the directory entry before reporting success. */
  readonly fsync?: boolean;
  readonly signal?: AbortSignal;
}

/**
 * Writes a file the only safe way: bytes into a fresh O_EXCL temp file in the target
 * directory (opened by descriptor, no-follow), then published by name in one step. Readers
 * never see a half-written file; a failed or aborted write leaves nothing behind (the temp
 * file is always removed); the existing entry at the name is never touched unless
 * `overwrite`, and even then only replaced, never written through.
 */
export async function writeEntry(
  ctx: FsContext,
  rootFd: number,
  names: readonly string[],
  source: WriteSource,
  options: WriteOptions = {},
): Promise<EntryInfo> {
  options.signal?.throwIfAborted();
  const errCtx = { op: "write", path: displayPath(names) };
  if (names.length === 0) throw isADirectory(errCtx);
  const name = names[names.length - 1] as string;
  const parentFd = options.parents
    ? ensureDirectory(ctx, rootFd, names.slice(0, -1), errCtx, { finalFileCode: "not_found" })
    : openParent(ctx, rootFd, names, errCtx).fd;
  try {
    // Early answer so a large upload is refused before its bytes are read. Not the safety
    // check (the name may appear later): the atomic publish below is.
    const existing = lstatName(ctx, parentFd, name, errCtx);
    if (existing !== undefined && (!options.overwrite || existing.isDirectory())) {
      throw errnoError(Errno.EEXIST, errCtx);
    }
    const maxBytes = options.maxBytes ?? ctx.limits.maxWriteBytes;
    const written = await writeTemp(ctx, parentFd, source, maxBytes, options, errCtx);
    try {
      publishTemp(ctx, parentFd, written.tempName, name, options.overwrite === true, errCtx);
    } catch (err) {
      ctx.sys.unlinkat(parentFd, written.tempName, 0);
      throw err;
    }
    if (options.fsync ?? ctx.fsync) await syncDirectory(ctx, parentFd, errCtx);
    return { ...written.info, name };
  } finally {
    ctx.sys.close(parentFd);
  }
}

export interface WrittenTemp {
  readonly tempName: string;
  readonly info: EntryInfo;
}

/**
 * Creates a temp file in `dirfd`, fills it from `source` and closes it. On any failure the
 * temp file is removed before the error propagates.
 */
export async function writeTemp(
  ctx: FsContext,
  dirfd: number,
  source: WriteSource,
  maxBytes: number,
  options: Pick<WriteOptions, "fsync" | "signal">,
  errCtx: ErrnoErrorContext,
): Promise<WrittenTemp> {
  const temp = createTempFile(ctx, dirfd, errCtx);
  let fdOpen = true;
  try {
    try {
      await pumpToFd(temp.fd, source, maxBytes, options.signal);
    } catch (err) {
      if (err instanceof SourceTooLarge) throw tooLarge(errCtx, "maxBytes", maxBytes);
      throw mapNodeIoError(err, errCtx);
    }
    if (options.fsync ?? ctx.fsync) await syncFd(temp.fd, true);
    const info = entryInfoOf(temp.name, fstatOrThrow(ctx, temp.fd, errCtx));
    ctx.sys.close(temp.fd);
    fdOpen = false;
    return { tempName: temp.name, info };
  } catch (err) {
    if (fdOpen) ctx.sys.close(temp.fd);
    ctx.sys.unlinkat(dirfd, temp.name, 0);
    throw err;
  }
}

/**
 * Gives the temp file its final name inside the same directory.
 *
 * No-clobber: renameat2(RENAME_NOREPLACE) fails with EEXIST on any existing name, a dangling
 * symlink included, and never follows it. Filesystems without RENAME_NOREPLACE (NFS) answer
 * EINVAL; then linkat does the same job (it also fails on any existing name and never
 * follows), and the temp name is unlinked after. Overwrite: a plain rename, which replaces
 * the directory entry itself: a symlink there is replaced, its target untouched.
 */
export function publishTemp(
  ctx: FsContext,
  dirfd: number,
  tempName: string,
  name: string,
  overwrite: boolean,
  errCtx: ErrnoErrorContext,
): void {
  if (overwrite) {
    const renamed = ctx.sys.renameat2(dirfd, tempName, dirfd, name, 0);
    if (!renamed.ok)
      throw errnoError(renamed.errno === Errno.EISDIR ? Errno.EEXIST : renamed.errno, errCtx);
    return;
  }
  const renamed = ctx.sys.renameat2(dirfd, tempName, dirfd, name, RENAME_NOREPLACE);
  if (renamed.ok) return;
  if (renamed.errno !== Errno.EINVAL && renamed.errno !== Errno.ENOSYS) {
    throw errnoError(renamed.errno, errCtx);
  }
  const linked = ctx.sys.linkat(dirfd, tempName, dirfd, name, 0);
  if (!linked.ok) throw errnoError(linked.errno, errCtx);
  ctx.sys.unlinkat(dirfd, tempName, 0);
}

/** fsync of a directory, so a published name survives a crash. */
export async function syncDirectory(
  ctx: FsContext,
  dirfd: number,
  errCtx: ErrnoErrorContext,
): Promise<void> {
  const opened = ctx.sys.reopen(dirfd, O_RDONLY | O_DIRECTORY);
  if (!opened.ok) throw errnoError(opened.errno, errCtx);
  try {
    await syncFd(opened.value);
  } finally {
    ctx.sys.close(opened.value);
  }
}
