import { domainError, WorkcellError } from "../../shared/errors/index.ts";
import { entryKindOf } from "./entry-kind.ts";
import { errnoError, notFound } from "./errno-error.ts";
import { displayPath, type FsContext, lstatName, openParent, withFd } from "./fs-context.ts";
import { AT_REMOVEDIR, Errno } from "./syscalls.ts";
import { deleteTree, newTreeBudget, openChildDirectory, scanTree } from "./tree-walk.ts";

export interface RemoveOptions {
  /** Remove a directory with everything in it; without it a non-empty directory is a conflict. */
  readonly recursive?: boolean;
  readonly signal?: AbortSignal;
}

/**
 * Deletes one entry. A symlink is removed as a link (unlinkat never follows), a file is
 * unlinked (a hard link elsewhere keeps its bytes), a special file is refused (forbidden),
 * the bound directory itself (the Workdir root) is refused (400).
 *
 * A recursive delete first scans the tree and refuses it, untouched, if it contains a
 * special file or is over the entry/depth bounds; only then does it delete. Something
 * created in the tree during the delete is still bounded and still checked.
 */
export function removeEntry(
  ctx: FsContext,
  rootFd: number,
  names: readonly string[],
  options: RemoveOptions = {},
): void {
  options.signal?.throwIfAborted();
  const errCtx = { op: "delete", path: displayPath(names) };
  if (names.length === 0) {
    throw new WorkcellError("invalid_request", "The Workdir root cannot be deleted.", {
      details: { path: "/", op: "delete", reason: "workdir_root" },
    });
  }
  const parent = openParent(ctx, rootFd, names, errCtx);
  withFd(ctx, parent.fd, (parentFd) => {
    const st = lstatName(ctx, parentFd, parent.name, errCtx);
    if (st === undefined) throw notFound(errCtx);
    const kind = entryKindOf(st);
    if (kind === "special") {
      throw domainError("special_file_refused", { details: { path: errCtx.path, op: errCtx.op } });
    }
    if (kind !== "dir") {
      const removed = ctx.sys.unlinkat(parentFd, parent.name, 0);
      if (!removed.ok) throw errnoError(removed.errno, errCtx);
      return;
    }
    if (!options.recursive) {
      const removed = ctx.sys.unlinkat(parentFd, parent.name, AT_REMOVEDIR);
      if (!removed.ok) throw errnoError(removed.errno, errCtx);
      return;
    }
    const dir = openChildDirectory(ctx, parentFd, parent.name);
    if (!dir.ok) throw errnoError(dir.errno === Errno.ENOTDIR ? Errno.ELOOP : dir.errno, errCtx);
    withFd(ctx, dir.value, (fd) =>
      scanTree(ctx, fd, 1, newTreeBudget(ctx), errCtx, options.signal),
    );
    deleteTree(ctx, parentFd, parent.name, 1, newTreeBudget(ctx), errCtx, options.signal);
  });
}
