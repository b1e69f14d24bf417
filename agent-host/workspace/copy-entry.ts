import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import { type EntryInfo, entryInfoOf, entryKindOf } from "./entry-kind.ts";
import {
  type ErrnoErrorContext,
  errnoError,
  isADirectory,
  lookupError,
  tooLarge,
} from "./errno-error.ts";
import { readAt, writeFully } from "./fd-io.ts";
import {
  displayPath,
  type FsContext,
  finishNewEntry,
  fstatOrThrow,
  lstatName,
  openParent,
  tempName,
  withFdAsync,
} from "./fs-context.ts";
import { openFileReader } from "./read-file.ts";
import {
  Errno,
  O_CLOEXEC,
  O_CREAT,
  O_DIRECTORY,
  O_EXCL,
  O_NOCTTY,
  O_NOFOLLOW,
  O_NONBLOCK,
  O_PATH,
  O_RDONLY,
  O_WRONLY,
  RENAME_NOREPLACE,
  type SysPath,
} from "./syscalls.ts";
import {
  deleteTree,
  newTreeBudget,
  openChildDirectory,
  readTreeNames,
  type TreeBudget,
} from "./tree-walk.ts";
import { DIR_MODE, FILE_MODE } from "./workspace-limits.ts";
import { writeEntry } from "./write-file.ts";

/** Bytes per read/write when copying file contents. */
export const COPY_CHUNK_BYTES = 256 * 1024;

export interface CopyOptions {
  /** Replace an existing file at the destination (never a directory). */
  readonly overwrite?: boolean;
  /** Required to copy a directory. */
  readonly recursive?: boolean;
  readonly signal?: AbortSignal;
}

/**
 * Copies a file or a directory tree inside the bound directory, with the read rules on the
 * source (regular files and real directories only: a symlink or special file anywhere in
 * the source is forbidden) and the write rules on the destination (no-clobber unless
 * `overwrite`, new files 0600, new directories 0700).
 *
 * A file is streamed into a temp file and published like any write. A tree is built inside
 * a temp directory next to the destination and published with one RENAME_NOREPLACE, so the
 * destination appears complete or not at all; on any failure the temp tree is removed.
 */
export async function copyEntry(
  ctx: FsContext,
  rootFd: number,
  from: readonly string[],
  to: readonly string[],
  options: CopyOptions = {},
): Promise<EntryInfo> {
  options.signal?.throwIfAborted();
  const errCtx = { op: "copy", path: displayPath(from) };
  if (from.length === 0) throw isADirectory(errCtx);
  if (to.length === 0) throw errnoError(Errno.EEXIST, { op: "copy", path: displayPath(to) });
  if (to.length >= from.length && from.every((name, i) => to[i] === name)) {
    throw new WorkcellError("invalid_request", "A directory cannot be copied into itself.", {
      details: { path: errCtx.path, to: displayPath(to), reason: "copy_into_itself" },
    });
  }
  const handle = ctx.resolver.open(rootFd, from, O_PATH);
  if (!handle.ok) {
    throw lookupError(ctx.sys, rootFd, from, handle.errno, errCtx, { finalFileCode: "not_found" });
  }
  let sourceDir: number;
  try {
    const kind = entryKindOf(fstatOrThrow(ctx, handle.value, errCtx));
    if (kind === "file") {
      const reader = openFileReader(ctx, rootFd, from, options.signal);
      try {
        return await writeEntry(ctx, rootFd, to, reader.stream({ signal: options.signal }), {
          overwrite: options.overwrite === true,
          maxBytes: ctx.limits.maxCopyBytes,
          signal: options.signal,
        });
      } finally {
        reader.close();
      }
    }
    if (kind !== "dir") throw refused(kind, errCtx);
    if (!options.recursive) throw isADirectory(errCtx);
    const reopened = ctx.sys.reopen(handle.value, O_RDONLY | O_DIRECTORY);
    if (!reopened.ok) throw errnoError(reopened.errno, errCtx);
    sourceDir = reopened.value;
  } finally {
    ctx.sys.close(handle.value);
  }
  return withFdAsync(ctx, sourceDir, (srcFd) =>
    copyDirectory(ctx, rootFd, srcFd, to, options, errCtx),
  );
}

async function copyDirectory(
  ctx: FsContext,
  rootFd: number,
  srcFd: number,
  to: readonly string[],
  options: CopyOptions,
  errCtx: ErrnoErrorContext,
): Promise<EntryInfo> {
  const destCtx = { op: "copy", path: displayPath(to) };
  const parent = openParent(ctx, rootFd, to, destCtx);
  try {
    if (lstatName(ctx, parent.fd, parent.name, destCtx) !== undefined) {
      throw errnoError(Errno.EEXIST, destCtx);
    }
    const temp = tempName();
    const made = ctx.sys.mkdirat(parent.fd, temp, DIR_MODE);
    if (!made.ok) throw errnoError(made.errno, destCtx);
    let published = false;
    try {
      const tempDir = openChildDirectory(ctx, parent.fd, temp);
      if (!tempDir.ok) throw errnoError(tempDir.errno, destCtx);
      const info = await withFdAsync(ctx, tempDir.value, async (dstFd) => {
        finishNewEntry(ctx, dstFd, DIR_MODE, destCtx);
        const bytes = { copied: 0 };
        await copyTree(ctx, srcFd, dstFd, 1, newTreeBudget(ctx), bytes, errCtx, options.signal);
        return entryInfoOf(parent.name, fstatOrThrow(ctx, dstFd, destCtx));
      });
      publishDirectory(ctx, parent.fd, temp, parent.name, destCtx);
      published = true;
      return info;
    } finally {
      if (!published) {
        try {
          deleteTree(ctx, parent.fd, temp, 1, newTreeBudget(ctx), destCtx, undefined);
        } catch {
          // Best effort: the temp tree holds only our own copies; a leftover is hidden from
          // listings (temp prefix) and its error must not mask the original one.
        }
      }
    }
  } finally {
    ctx.sys.close(parent.fd);
  }
}

/**
 * RENAME_NOREPLACE publishes the tree or fails on any existing name. Without it (NFS:
 * EINVAL) there is no atomic no-clobber rename for directories; the fallback checks the name
 * then renames, and the only thing the remaining race can replace is an empty directory
 * created in that instant by the same user.
 */
function publishDirectory(
  ctx: FsContext,
  dirfd: number,
  temp: string,
  name: string,
  errCtx: ErrnoErrorContext,
): void {
  const renamed = ctx.sys.renameat2(dirfd, temp, dirfd, name, RENAME_NOREPLACE);
  if (renamed.ok) return;
  if (renamed.errno !== Errno.EINVAL && renamed.errno !== Errno.ENOSYS) {
    throw errnoError(renamed.errno, errCtx);
  }
  if (lstatName(ctx, dirfd, name, errCtx) !== undefined) throw errnoError(Errno.EEXIST, errCtx);
  const plain = ctx.sys.renameat2(dirfd, temp, dirfd, name, 0);
  if (!plain.ok)
    throw errnoError(plain.errno === Errno.ENOTEMPTY ? Errno.EEXIST : plain.errno, errCtx);
}

async function copyTree(
  ctx: FsContext,
  srcFd: number,
  dstFd: number,
  depth: number,
  budget: TreeBudget,
  bytes: { copied: number },
  errCtx: ErrnoErrorContext,
  signal: AbortSignal | undefined,
): Promise<void> {
  signal?.throwIfAborted();
  if (depth > budget.maxDepth) throw tooLarge(errCtx, "maxTreeDepth", budget.maxDepth);
  for (const name of readTreeNames(ctx, srcFd, budget, errCtx)) {
    budget.entries++;
    const st = ctx.sys.lstatAt(srcFd, name);
    if (!st.ok) {
      if (st.errno === Errno.ENOENT) continue;
      throw errnoError(st.errno, errCtx);
    }
    const kind = entryKindOf(st.value);
    if (kind === "file") {
      await copyFile(ctx, srcFd, dstFd, name, bytes, errCtx, signal);
    } else if (kind === "dir") {
      const made = ctx.sys.mkdirat(dstFd, name, DIR_MODE);
      if (!made.ok) throw errnoError(made.errno, errCtx);
      const child = openChildDirectory(ctx, dstFd, name);
      if (!child.ok) throw errnoError(child.errno, errCtx);
      await withFdAsync(ctx, child.value, async (childDst) => {
        finishNewEntry(ctx, childDst, DIR_MODE, errCtx);
        const src = openChildDirectory(ctx, srcFd, name);
        if (!src.ok)
          throw errnoError(src.errno === Errno.ENOTDIR ? Errno.ELOOP : src.errno, errCtx);
        await withFdAsync(ctx, src.value, (childSrc) =>
          copyTree(ctx, childSrc, childDst, depth + 1, budget, bytes, errCtx, signal),
        );
      });
    } else {
      throw refused(kind, errCtx);
    }
  }
}

/** One regular file, opened the read way (O_PATH, fstat, reopen) and created O_EXCL. */
async function copyFile(
  ctx: FsContext,
  srcDir: number,
  dstDir: number,
  name: SysPath,
  bytes: { copied: number },
  errCtx: ErrnoErrorContext,
  signal: AbortSignal | undefined,
): Promise<void> {
  const handle = ctx.sys.openat(srcDir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (!handle.ok) throw errnoError(handle.errno, errCtx);
  let src: number;
  try {
    const kind = entryKindOf(fstatOrThrow(ctx, handle.value, errCtx));
    if (kind !== "file") throw refused(kind, errCtx);
    const reopened = ctx.sys.reopen(handle.value, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (!reopened.ok) throw errnoError(reopened.errno, errCtx);
    src = reopened.value;
  } finally {
    ctx.sys.close(handle.value);
  }
  await withFdAsync(ctx, src, async (srcFd) => {
    const dst = ctx.sys.openat(
      dstDir,
      name,
      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
      FILE_MODE,
    );
    if (!dst.ok) throw errnoError(dst.errno, errCtx);
    await withFdAsync(ctx, dst.value, async (dstFd) => {
      finishNewEntry(ctx, dstFd, FILE_MODE, errCtx);
      for (let position = 0; ; ) {
        signal?.throwIfAborted();
        const chunk = await readAt(srcFd, COPY_CHUNK_BYTES, position);
        if (chunk.byteLength === 0) return;
        bytes.copied += chunk.byteLength;
        if (bytes.copied > ctx.limits.maxCopyBytes) {
          throw tooLarge(errCtx, "maxCopyBytes", ctx.limits.maxCopyBytes);
        }
        await writeFully(dstFd, chunk, position);
        position += chunk.byteLength;
      }
    });
  });
}

function refused(kind: "symlink" | "special" | "dir" | "file", errCtx: ErrnoErrorContext) {
  return kind === "symlink"
    ? domainError("symlink_refused", { details: { path: errCtx.path, op: errCtx.op } })
    : domainError("special_file_refused", { details: { path: errCtx.path, op: errCtx.op } });
}
