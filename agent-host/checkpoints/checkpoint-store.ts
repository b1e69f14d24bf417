import { randomBytes } from "node:crypto";
import { fstatSync } from "node:fs";
import { WorkcellError } from "../../shared/errors/index.ts";
import { normalizeWorkdirPath, uidDirname } from "../../shared/paths/index.ts";
import { errnoError } from "../workspace/errno-error.ts";
import type { Owner } from "../workspace/fs-context.ts";
import type { PathResolver } from "../workspace/path-resolver.ts";
import {
  AT_FDCWD,
  Errno,
  type FsSyscalls,
  O_CLOEXEC,
  O_CREAT,
  O_DIRECTORY,
  O_EXCL,
  O_NOFOLLOW,
  O_RDONLY,
  O_WRONLY,
  RENAME_NOREPLACE,
} from "../workspace/syscalls.ts";
import { USERS_DIR, WORKSPACE_DIR } from "../workspace/user-workspaces.ts";
import type { CheckpointCopyMode, CheckpointSyscalls } from "./checkpoint-syscalls.ts";
import { copyTree, finishDirectory, type TreeStats } from "./copy-tree.ts";
import { measureTree } from "./measure-tree.ts";
import { removeTree } from "./remove-tree.ts";
import { sameTree } from "./same-tree.ts";
import { EMPTY_SUBVOLUME_STAND_IN_INO, type SubvolumeSyscalls } from "./subvolumes.ts";

/**
 * `<data-root>/checkpoints/<uid dirname>/<checkpoint_id>/`: a sibling of `users/`, so on the
 * UserWorkspace's filesystem (reflinks work) but never inside a UserWorkspace, never
 * bind-mounted into a sandbox and never reachable through the file API. Owned by the
 * agent-host, 0700 (docs/architecture.md §16, docs/decisions/0151).
 */
export const CHECKPOINTS_DIR = "checkpoints";
/** A checkpoint being taken; renamed to its id when complete, so an id is always whole. */
export const TAKING_PREFIX = ".taking-";

export interface CheckpointStoreDeps {
  readonly dataRoot: string;
  readonly sys: FsSyscalls;
  readonly resolver: PathResolver;
  readonly cp: CheckpointSyscalls;
  /** How files are copied on this node (detectCheckpointMode). */
  readonly mode: CheckpointCopyMode;
  /** Owner of what a restore puts in a Workdir (the sandbox user); unset: ours. */
  readonly owner?: Owner;
  readonly maxEntries: number;
  readonly maxDepth: number;
  /**
   * The btrfs calls where the data root has subvolumes (detectSubvolumes): a Workdir that is
   * a subvolume is checkpointed as one read-only snapshot (docs/decisions/0190).
   */
  readonly subvolumes?: SubvolumeSyscalls;
}

/** The bytes side of checkpoints on one node; rows and rules are in checkpoints.ts. */
export interface CheckpointStore {
  readonly mode: CheckpointCopyMode;
  /** What a checkpoint of the Workdir would hold now (for the quota check). */
  measure(uid: string, workdirPath: string, signal: AbortSignal): TreeStats;
  /**
   * Copies the Workdir into the store as `checkpointId`, whole or not at all; files
   * unchanged since checkpoint `baseId` (the thread's previous one) are hard links to it.
   */
  take(
    uid: string,
    workdirPath: string,
    checkpointId: string,
    signal: AbortSignal,
    baseId?: string,
  ): Promise<TreeStats>;
  /**
   * True when the Workdir is still exactly checkpoint directory `baseId` (sameTree): a new
   * checkpoint may then name that directory instead of copying (decision 0171). False when
   * the base is gone.
   */
  unchangedSince(uid: string, workdirPath: string, baseId: string): boolean;
  /** Copies checkpoint `checkpointId` into `dstFd` (an empty directory we hold). */
  copyOut(
    uid: string,
    checkpointId: string,
    dstFd: number,
    owner: boolean,
    signal: AbortSignal,
  ): Promise<TreeStats>;
  /** Removes a checkpoint's directory (missing is fine). */
  remove(uid: string, checkpointId: string): void;
  /** Checkpoint ids with a directory, per uid dirname (for the reconciler). */
  listIds(): Map<string, string[]>;
  /** Removes a directory of the store by uid dirname and name (the reconciler's orphans). */
  removeByDirname(dirname: string, name: string): void;
  /** Descriptor of `checkpoints/<uid dirname>` (created 0700); close it. */
  openUserDir(uid: string): number;
  /** Descriptor (O_RDONLY) of the Workdir's parent directory and the Workdir's name. */
  openWorkdirParent(uid: string, workdirPath: string): { fd: number; name: string };
  readonly deps: CheckpointStoreDeps;
}

export function createCheckpointStore(deps: CheckpointStoreDeps): CheckpointStore {
  const sys = deps.sys;
  const dirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

  function openDataRoot(): number {
    const opened = sys.openat(AT_FDCWD, deps.dataRoot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!opened.ok) {
      throw new WorkcellError("unavailable", "The data root cannot be opened: check its setting.", {
        details: { errno: opened.errno },
      });
    }
    return opened.value;
  }

  function ensureDir(parentFd: number, name: string): number {
    const made = sys.mkdirat(parentFd, name, 0o700);
    if (!made.ok && made.errno !== Errno.EEXIST) {
      throw errnoError(made.errno, { op: "checkpoint store", path: name });
    }
    const opened = sys.openat(parentFd, name, dirFlags);
    if (!opened.ok) throw errnoError(opened.errno, { op: "checkpoint store", path: name });
    return opened.value;
  }

  function openUserDir(uid: string): number {
    const root = openDataRoot();
    try {
      const store = ensureDir(root, CHECKPOINTS_DIR);
      try {
        return ensureDir(store, uidDirname(uid));
      } finally {
        sys.close(store);
      }
    } finally {
      sys.close(root);
    }
  }

  function workdirNames(uid: string, workdirPath: string): string[] {
    const path = normalizeWorkdirPath(workdirPath);
    if (path === "" || path === ".") {
      throw new WorkcellError(
        "invalid_request",
        "A checkpoint needs a Workdir below the UserWorkspace root.",
      );
    }
    return [USERS_DIR, uidDirname(uid), WORKSPACE_DIR, ...path.split("/")];
  }

  function openBelowRoot(names: readonly string[]): number {
    const root = openDataRoot();
    try {
      const opened = deps.resolver.open(root, names, O_RDONLY | O_DIRECTORY);
      if (!opened.ok) {
        if (opened.errno === Errno.ENOENT) {
          throw new WorkcellError("not_found", "The Workdir does not exist on this node.", {
            details: { reason: "workdir_missing" },
          });
        }
        throw errnoError(opened.errno, { op: "open workdir", path: names.slice(3).join("/") });
      }
      return opened.value;
    } finally {
      sys.close(root);
    }
  }

  function withFd<T>(fd: number, fn: (fd: number) => T): T {
    try {
      return fn(fd);
    } finally {
      sys.close(fd);
    }
  }

  async function withFdAsync<T>(fd: number, fn: (fd: number) => Promise<T>): Promise<T> {
    try {
      return await fn(fd);
    } finally {
      sys.close(fd);
    }
  }

  return {
    mode: deps.mode,
    deps,
    openUserDir,

    openWorkdirParent(uid, workdirPath) {
      const names = workdirNames(uid, workdirPath);
      return { fd: openBelowRoot(names.slice(0, -1)), name: names[names.length - 1] as string };
    },

    measure(uid, workdirPath, signal) {
      return withFd(openBelowRoot(workdirNames(uid, workdirPath)), (fd) =>
        measureTree(deps, fd, signal),
      );
    },

    async take(uid, workdirPath, checkpointId, signal, baseId) {
      return withFdAsync(openBelowRoot(workdirNames(uid, workdirPath)), (workdir) =>
        withFdAsync(openUserDir(uid), async (userDir) => {
          const temp = TAKING_PREFIX + checkpointId;
          if (deps.subvolumes?.isSubvolume(workdir)) {
            const snapped = takeSnapshot(
              deps.subvolumes,
              workdir,
              userDir,
              temp,
              checkpointId,
              signal,
            );
            // A nested subvolume's files are not in a snapshot: those Workdirs copy per file.
            if (snapped !== undefined) return snapped;
          }
          const made = sys.mkdirat(userDir, temp, 0o700);
          if (!made.ok) throw errnoError(made.errno, { op: "checkpoint", path: temp });
          let published = false;
          try {
            // A base that is gone (pruned meanwhile) or was never whole: a plain copy.
            const base = baseId === undefined ? undefined : sys.openat(userDir, baseId, dirFlags);
            const stats = await withFdAsync(openOrThrow(userDir, temp), async (dst) => {
              const copied = await copyTree(
                { ...deps, owner: undefined },
                workdir,
                dst,
                deps.mode,
                signal,
                base?.ok ? base.value : undefined,
              ).finally(() => {
                if (base?.ok) sys.close(base.value);
              });
              finishDirectory(
                { ...deps, owner: undefined },
                dst,
                fstatSync(workdir, { bigint: true }),
              );
              return copied;
            });
            const renamed = sys.renameat2(userDir, temp, userDir, checkpointId, RENAME_NOREPLACE);
            if (!renamed.ok)
              throw errnoError(renamed.errno, { op: "checkpoint", path: checkpointId });
            published = true;
            return stats;
          } finally {
            if (!published) removeEntry(userDir, temp);
          }
        }),
      );
    },

    unchangedSince(uid, workdirPath, baseId) {
      return withFd(openBelowRoot(workdirNames(uid, workdirPath)), (workdir) =>
        withFd(openUserDir(uid), (userDir) => {
          const base = sys.openat(userDir, baseId, dirFlags);
          if (!base.ok) return false;
          return withFd(base.value, (baseFd) =>
            sameTree(
              { ...deps, sameInodes: deps.subvolumes?.isSubvolume(baseFd) === true },
              baseFd,
              workdir,
            ),
          );
        }),
      );
    },

    async copyOut(uid, checkpointId, dstFd, owner, signal) {
      return withFdAsync(openUserDir(uid), (userDir) =>
        withFdAsync(openOrThrow(userDir, checkpointId), (src) =>
          copyTree(owner ? deps : { ...deps, owner: undefined }, src, dstFd, deps.mode, signal),
        ),
      );
    },

    remove(uid, checkpointId) {
      withFd(openUserDir(uid), (userDir) => removeEntry(userDir, checkpointId));
    },

    listIds() {
      const found = new Map<string, string[]>();
      withFd(openDataRoot(), (root) => {
        const store = sys.openat(root, CHECKPOINTS_DIR, dirFlags);
        if (!store.ok) return;
        withFd(store.value, (storeFd) => {
          for (const dirname of listNames(storeFd)) {
            const user = sys.openat(storeFd, dirname, dirFlags);
            if (!user.ok) continue;
            withFd(user.value, (userFd) => found.set(dirname, listNames(userFd)));
          }
        });
      });
      return found;
    },

    removeByDirname(dirname, name) {
      withFd(openDataRoot(), (root) =>
        withFd(openOrThrow(root, CHECKPOINTS_DIR), (store) =>
          withFd(openOrThrow(store, dirname), (user) => removeEntry(user, name)),
        ),
      );
    },
  };

  /**
   * A read-only snapshot of the Workdir subvolume as checkpoint `checkpointId`, measured
   * after it is taken (what it holds cannot change); undefined, with nothing left, when the
   * Workdir holds a nested subvolume, whose files a snapshot does not take.
   */
  function takeSnapshot(
    subvolumes: SubvolumeSyscalls,
    workdir: number,
    userDir: number,
    temp: string,
    checkpointId: string,
    signal: AbortSignal,
  ): TreeStats | undefined {
    const made = subvolumes.snapshot(workdir, userDir, temp);
    if (!made.ok) throw errnoError(made.errno, { op: "checkpoint", path: temp });
    let published = false;
    try {
      let standIns = 0;
      const stats = withFd(openOrThrow(userDir, temp), (fd) =>
        measureTree(deps, fd, signal, (ino) => {
          if (ino === EMPTY_SUBVOLUME_STAND_IN_INO) standIns++;
        }),
      );
      if (standIns > 0) return undefined;
      const renamed = sys.renameat2(userDir, temp, userDir, checkpointId, RENAME_NOREPLACE);
      if (!renamed.ok) throw errnoError(renamed.errno, { op: "checkpoint", path: checkpointId });
      published = true;
      return stats;
    } finally {
      if (!published) removeEntry(userDir, temp);
    }
  }

  /** Removes a store entry: a snapshot with one ioctl, a copied tree file by file. */
  function removeEntry(parentFd: number, name: string): void {
    const subvolumes = deps.subvolumes;
    if (subvolumes !== undefined) {
      const opened = sys.openat(parentFd, name, dirFlags);
      if (opened.ok && withFd(opened.value, (fd) => subvolumes.isSubvolume(fd))) {
        const destroyed = subvolumes.destroy(parentFd, name);
        if (!destroyed.ok && destroyed.errno !== Errno.ENOENT) {
          throw errnoError(destroyed.errno, { op: "checkpoint store", path: name });
        }
        return;
      }
    }
    removeTree(sys, parentFd, name, deps.maxDepth + 2);
  }

  function openOrThrow(parentFd: number, name: string): number {
    const opened = sys.openat(parentFd, name, dirFlags);
    if (!opened.ok) {
      if (opened.errno === Errno.ENOENT) {
        throw new WorkcellError("not_found", "The checkpoint's files are not on this node.", {
          details: { reason: "checkpoint_missing" },
        });
      }
      throw errnoError(opened.errno, { op: "checkpoint", path: name });
    }
    return opened.value;
  }

  function listNames(dirFd: number): string[] {
    const listed = sys.readdirAt(dirFd, deps.maxEntries);
    if (!listed.ok) throw errnoError(listed.errno, { op: "checkpoint store", path: "" });
    return listed.value.names.map((name) => name.toString("utf8"));
  }
}

/**
 * Probes the store's filesystem once at start: `reflink` when FICLONE works between two
 * files in `<data-root>/checkpoints/`, `copy` otherwise.
 */
export function detectCheckpointMode(
  deps: Pick<CheckpointStoreDeps, "dataRoot" | "sys" | "cp">,
): CheckpointCopyMode {
  const { sys } = deps;
  const root = sys.openat(AT_FDCWD, deps.dataRoot, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (!root.ok) return "copy";
  try {
    sys.mkdirat(root.value, CHECKPOINTS_DIR, 0o700);
    const store = sys.openat(
      root.value,
      CHECKPOINTS_DIR,
      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
    );
    if (!store.ok) return "copy";
    try {
      const names = [0, 1].map(() => `.probe-${randomBytes(6).toString("hex")}`);
      const fds = names.map((name) =>
        sys.openat(store.value, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600),
      );
      try {
        const [a, b] = fds;
        if (a?.ok !== true || b?.ok !== true) return "copy";
        const src = sys.openat(store.value, names[0] as string, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (!src.ok) return "copy";
        try {
          return deps.cp.clone(src.value, b.value).ok ? "reflink" : "copy";
        } finally {
          sys.close(src.value);
        }
      } finally {
        for (const [i, fd] of fds.entries()) {
          if (fd.ok) sys.close(fd.value);
          sys.unlinkat(store.value, names[i] as string, 0);
        }
      }
    } finally {
      sys.close(store.value);
    }
  } finally {
    sys.close(root.value);
  }
}
