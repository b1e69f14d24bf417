import { domainError } from "../../shared/errors/index.ts";
import { entryKindOf } from "./entry-kind.ts";
import { type ErrnoErrorContext, errnoError, tooLarge } from "./errno-error.ts";
import type { FsContext } from "./fs-context.ts";
import {
  AT_REMOVEDIR,
  Errno,
  O_CLOEXEC,
  O_DIRECTORY,
  O_NOFOLLOW,
  O_RDONLY,
  type SysPath,
  type SysResult,
} from "./syscalls.ts";

/**
 * Recursive operations, all descriptor-relative: a child is opened by name inside the
 * descriptor of its parent with O_NOFOLLOW|O_DIRECTORY, so a directory swapped for a
 * symlink mid-walk fails to open instead of leading elsewhere, and names are lstat-ed, never
 * followed. One descriptor is held per level, hence the depth bound.
 */
export interface TreeBudget {
  readonly maxEntries: number;
  readonly maxDepth: number;
  /** Entries seen so far, shared by the whole walk. */
  entries: number;
}

export function newTreeBudget(ctx: FsContext): TreeBudget {
  return { maxEntries: ctx.limits.maxTreeEntries, maxDepth: ctx.limits.maxTreeDepth, entries: 0 };
}

/** Opens child `name` of `parentFd` as a real directory for reading; never a symlink. */
export function openChildDirectory(
  ctx: FsContext,
  parentFd: number,
  name: SysPath,
): SysResult<number> {
  return ctx.sys.openat(parentFd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/** All raw names of a directory, or payload_too_large when the budget would be exceeded. */
export function readTreeNames(
  ctx: FsContext,
  dirfd: number,
  budget: TreeBudget,
  errCtx: ErrnoErrorContext,
): Buffer[] {
  const remaining = budget.maxEntries - budget.entries;
  const listed = ctx.sys.readdirAt(dirfd, Math.max(remaining, 0));
  if (!listed.ok) throw errnoError(listed.errno, errCtx);
  if (listed.value.truncated) throw tooLarge(errCtx, "maxTreeEntries", budget.maxEntries);
  return listed.value.names;
}

function enterLevel(budget: TreeBudget, depth: number, errCtx: ErrnoErrorContext): void {
  if (depth > budget.maxDepth) throw tooLarge(errCtx, "maxTreeDepth", budget.maxDepth);
}

/**
 * Walks a tree without changing it and refuses it if it holds a special file (FIFO, socket,
 * device), so a recursive delete can say no before it removes anything. Symlinks are fine
 * here: a delete removes them as links.
 */
export function scanTree(
  ctx: FsContext,
  dirfd: number,
  depth: number,
  budget: TreeBudget,
  errCtx: ErrnoErrorContext,
  signal: AbortSignal | undefined,
): void {
  signal?.throwIfAborted();
  enterLevel(budget, depth, errCtx);
  for (const name of readTreeNames(ctx, dirfd, budget, errCtx)) {
    budget.entries++;
    const st = ctx.sys.lstatAt(dirfd, name);
    if (!st.ok) {
      if (st.errno === Errno.ENOENT) continue;
      throw errnoError(st.errno, errCtx);
    }
    const kind = entryKindOf(st.value);
    if (kind === "special") throw specialFile(errCtx);
    if (kind !== "dir") continue;
    const child = openChildDirectory(ctx, dirfd, name);
    if (!child.ok) {
      if (child.errno === Errno.ENOENT) continue;
      throw errnoError(child.errno === Errno.ENOTDIR ? Errno.ELOOP : child.errno, errCtx);
    }
    try {
      scanTree(ctx, child.value, depth + 1, budget, errCtx, signal);
    } finally {
      ctx.sys.close(child.value);
    }
  }
}

/**
 * Removes directory `name` of `parentFd` and everything below it. Files and symlinks are
 * unlinked (a symlink as a link: its target is never touched), directories are entered
 * no-follow and removed bottom-up, a special file stops the walk (forbidden). The directory
 * is listed again after each pass, so entries created meanwhile are removed too, up to the
 * entry budget.
 */
export function deleteTree(
  ctx: FsContext,
  parentFd: number,
  name: SysPath,
  depth: number,
  budget: TreeBudget,
  errCtx: ErrnoErrorContext,
  signal: AbortSignal | undefined,
): void {
  signal?.throwIfAborted();
  enterLevel(budget, depth, errCtx);
  const dir = openChildDirectory(ctx, parentFd, name);
  if (!dir.ok) {
    if (dir.errno === Errno.ENOENT) return;
    throw errnoError(dir.errno === Errno.ENOTDIR ? Errno.ELOOP : dir.errno, errCtx);
  }
  try {
    for (;;) {
      signal?.throwIfAborted();
      const names = readTreeNames(ctx, dir.value, budget, errCtx);
      if (names.length === 0) break;
      for (const child of names) {
        budget.entries++;
        const st = ctx.sys.lstatAt(dir.value, child);
        if (!st.ok) {
          if (st.errno === Errno.ENOENT) continue;
          throw errnoError(st.errno, errCtx);
        }
        const kind = entryKindOf(st.value);
        if (kind === "special") throw specialFile(errCtx);
        if (kind === "dir") {
          deleteTree(ctx, dir.value, child, depth + 1, budget, errCtx, signal);
          continue;
        }
        const removed = ctx.sys.unlinkat(dir.value, child, 0);
        if (!removed.ok && removed.errno !== Errno.ENOENT) throw errnoError(removed.errno, errCtx);
      }
    }
  } finally {
    ctx.sys.close(dir.value);
  }
  const removed = ctx.sys.unlinkat(parentFd, name, AT_REMOVEDIR);
  if (!removed.ok && removed.errno !== Errno.ENOENT) throw errnoError(removed.errno, errCtx);
}

function specialFile(errCtx: ErrnoErrorContext) {
  return domainError("special_file_refused", {
    message:
      "The tree contains a FIFO, socket or device, which this service never touches: remove it from a shell in the sandbox first.",
    details: { path: errCtx.path, op: errCtx.op },
  });
}
