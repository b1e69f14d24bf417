import { fstatSync } from "node:fs";
import { errnoError } from "../workspace/errno-error.ts";
import { Errno, O_CLOEXEC, O_DIRECTORY, O_NOFOLLOW, O_RDONLY } from "../workspace/syscalls.ts";
import type { CheckpointStore } from "./checkpoint-store.ts";
import { copyTree, finishDirectory, type TreeStats } from "./copy-tree.ts";
import { removeTree } from "./remove-tree.ts";

const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

/**
 * Creates the managed Workdir `forkWorkdirPath` (it must not exist: a fresh `projects/<uuid>`)
 * and fills it from checkpoint `checkpointId`, or from the Workdir `workdirPath` itself,
 * reflinked where the node can. Same no-follow copy as a checkpoint; on failure the new
 * directory is removed again.
 */
export async function forkWorkdir(
  store: CheckpointStore,
  plan: {
    uid: string;
    workdirPath: string;
    checkpointId: string | undefined;
    forkWorkdirPath: string;
  },
  signal: AbortSignal,
): Promise<TreeStats> {
  const { sys } = store.deps;
  const parent = store.openWorkdirParent(plan.uid, plan.forkWorkdirPath);
  try {
    const made = sys.mkdirat(parent.fd, parent.name, 0o700);
    if (!made.ok && made.errno !== Errno.EEXIST) {
      throw errnoError(made.errno, { op: "fork", path: plan.forkWorkdirPath });
    }
    let done = false;
    try {
      const dst = sys.openat(parent.fd, parent.name, DIR_FLAGS);
      if (!dst.ok) throw errnoError(dst.errno, { op: "fork", path: plan.forkWorkdirPath });
      try {
        // Only an empty directory (just made by ensureManagedWorkdir, say) is filled.
        const listed = sys.readdirAt(dst.value, 1);
        if (!listed.ok || listed.value.names.length > 0) {
          throw errnoError(listed.ok ? Errno.ENOTEMPTY : listed.errno, {
            op: "fork",
            path: plan.forkWorkdirPath,
          });
        }
        const stats =
          plan.checkpointId === undefined
            ? await copyCurrent(store, plan, dst.value, signal)
            : await store.copyOut(plan.uid, plan.checkpointId, dst.value, true, signal);
        finishDirectory(store.deps, dst.value, {
          ...fstatSync(dst.value, { bigint: true }),
          mode: 0o40700n,
        });
        done = true;
        return stats;
      } finally {
        sys.close(dst.value);
      }
    } finally {
      if (!done) removeTree(sys, parent.fd, parent.name, store.deps.maxDepth + 2);
    }
  } finally {
    sys.close(parent.fd);
  }
}

async function copyCurrent(
  store: CheckpointStore,
  plan: { uid: string; workdirPath: string },
  dstFd: number,
  signal: AbortSignal,
): Promise<TreeStats> {
  const { sys } = store.deps;
  const parent = store.openWorkdirParent(plan.uid, plan.workdirPath);
  try {
    const src = sys.openat(parent.fd, parent.name, DIR_FLAGS);
    if (!src.ok) throw errnoError(src.errno, { op: "fork", path: plan.workdirPath });
    try {
      return await copyTree(store.deps, src.value, dstFd, store.mode, signal);
    } finally {
      sys.close(src.value);
    }
  } finally {
    sys.close(parent.fd);
  }
}
