import { fstatSync } from "node:fs";
import { KEPT_MODE_BITS } from "./copy-tree.ts";
import { type DiffDeps, diffTrees } from "./restore-diff.ts";

/**
 * True when the Workdir `workdirFd` is exactly the checkpoint directory `baseFd` as far as
 * a checkpoint keeps (decision 0171): the same names everywhere, every file unchanged by
 * the restore's rule (size, kept mode bits, nanosecond mtime, and a ctime strictly older
 * than the checkpoint's copy: nothing wrote, chmod'ed, utime'd, renamed or linked it
 * since), every directory's mode and mtime equal, the Workdir's own too. Nothing the
 * checkpoint skipped may be present (a symlink or FIFO is a name the base lacks). Metadata
 * only: a file whose ctime is not older counts as changed without reading it.
 */
export function sameTree(deps: DiffDeps, baseFd: number, workdirFd: number): boolean {
  const base = fstatSync(baseFd, { bigint: true });
  const workdir = fstatSync(workdirFd, { bigint: true });
  if (
    (base.mode & 0o7777n) !== (workdir.mode & BigInt(KEPT_MODE_BITS)) ||
    base.mtimeNs !== workdir.mtimeNs
  ) {
    return false;
  }
  const diff = diffTrees({ ...deps, metadataOnly: true }, baseFd, workdirFd);
  // The diff always lists the root to refinish; its metadata was compared above.
  const subdirs = diff.dirs.filter((dir) => dir.path.length > 0);
  return diff.remove.length === 0 && diff.put.length === 0 && subdirs.length === 0;
}
