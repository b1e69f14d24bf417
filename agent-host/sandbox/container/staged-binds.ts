import type { FileHandle } from "node:fs/promises";
import { chmod, lstat, mkdir, readdir, rmdir } from "node:fs/promises";
import { join } from "node:path";
import { createHostMounts, type HostMounts } from "../instance/host-mounts.ts";

// Docker (runc) resolves a bind source as a path when it mounts it, following symlinks,
// and the UserWorkspace / Workdir paths pass through directories the sandbox user can
// rename: a symlink swapped in between agent-host's no-follow open and runc's mount
// redirected the bind to a directory outside the UserWorkspace, mounted until the
// post-start check removed the container (decision 0055; the race test caught it). A
// /proc/<pid>/fd/<n> source does not help: runc mounts from its own new mount
// namespace and the kernel refuses (EINVAL) a bind of another namespace's mount.
//
// So the container tier does what the process tier does (generation-dirs.ts): root binds
// each opened directory from its descriptor (mount(2) gets /proc/self/fd/<n> and binds
// the open directory itself) onto a mount point below a root-only staging directory, and
// Docker binds that path, which no one else can change. Once the container runs, its
// mount namespace holds its own copy (binds are rprivate) and the staging mounts are
// removed. Both are syscalls of agent-host itself (HostMounts), never a `mount` or
// `umount` process: a fork of agent-host stalls its event loop (decision 0119).
/** A node id as NODE_ID allows it: one path component, never `.`, `..` or a separator. */
const NODE_ID_COMPONENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/**
 * This node's staging root, `<dataRoot>/sandbox-binds/<nodeId>`. The data root is shared
 * by every node (and two nodes of the local stack share one kernel), so each node stages
 * in, and sweeps, a directory of its own: a sweep never touches another node's creates.
 */
export function nodeBindStagingDir(dataRoot: string, nodeId: string): string {
  if (!NODE_ID_COMPONENT.test(nodeId)) {
    throw new Error(
      `node id ${JSON.stringify(nodeId)} is not a valid NODE_ID (letters, digits, '.', '_' or '-', starting with a letter or digit)`,
    );
  }
  return join(dataRoot, "sandbox-binds", nodeId);
}

export type StagedBinds<K extends string> = {
  /** Host path of each staged bind: give these to Docker as bind sources. */
  paths: Record<K, string>;
  /** Unmounts and removes the staging directory; safe to call twice. */
  release(): Promise<void>;
};

/**
 * Binds each handle's directory at `<stagingRoot>/<name>/<key>`. `name` is unique per
 * create (the container name: generations are never reused), so a directory of that name
 * is debris of a create that crashed and is cleared first.
 */
export async function stageBinds<K extends string>(
  stagingRoot: string,
  name: string,
  handles: Record<K, FileHandle>,
  signal: AbortSignal,
  mounts: HostMounts = createHostMounts(),
): Promise<StagedBinds<K>> {
  await mkdir(stagingRoot, { recursive: true, mode: 0o700 });
  // Only root may pass through it: nobody else can rename or swap a staged mount point.
  await chmod(stagingRoot, 0o700);
  const dir = join(stagingRoot, name);
  await releaseDir(dir, mounts);
  await mkdir(dir, { mode: 0o700 });
  const release = () => releaseDir(dir, mounts);
  const paths = {} as Record<K, string>;
  try {
    for (const key of Object.keys(handles) as K[]) {
      const target = join(dir, key);
      await mkdir(target, { mode: 0o700 });
      // A mount takes microseconds and cannot be interrupted: the signal is checked before.
      signal.throwIfAborted();
      mounts.bind(`/proc/self/fd/${handles[key].fd}`, target);
      paths[key] = target;
    }
  } catch (error) {
    await release();
    throw error;
  }
  return { paths, release };
}

export type StagingSweep = {
  /** Staging directories of crashed creates that were unmounted and removed. */
  removed: string[];
  /** Entries that could not be removed (left as they are), with why. */
  failed: Array<{ name: string; error: string }>;
};

/**
 * Removes every staging directory below this node's staging root: what creates of a
 * previous process of this node left when it died between staging and release (the
 * mounts outlive the process; decision 0060). Run at node start, before this process
 * creates anything: like failRunsOfNode, it relies on one agent-host process per node id,
 * so everything found there belongs to a process that is gone. It reads one directory
 * and goes no further than `<entry>/<key>`; each entry is unmounted and `rmdir`-ed
 * (releaseDir), never deleted recursively, so a mount that will not go keeps the user's
 * files and is reported instead. Anything but a directory is left alone.
 */
export async function sweepStagedBinds(
  stagingRoot: string,
  signal: AbortSignal,
  mounts: HostMounts = createHostMounts(),
): Promise<StagingSweep> {
  const sweep: StagingSweep = { removed: [], failed: [] };
  const names = await readdir(stagingRoot).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return [];
    throw e;
  });
  for (const name of names.sort()) {
    signal.throwIfAborted();
    const dir = join(stagingRoot, name);
    try {
      if (!(await lstat(dir)).isDirectory()) {
        sweep.failed.push({ name, error: "not a staging directory; left as it is" });
        continue;
      }
      await releaseDir(dir, mounts);
      sweep.removed.push(name);
    } catch (error) {
      sweep.failed.push({ name, error: (error as Error).message });
    }
  }
  return sweep;
}

/**
 * Unmounts every staged bind of `dir` and removes it. Only `rmdir`, never a recursive
 * delete: a mount point that is still mounted (or anything else in the way) makes it
 * fail loudly instead of deleting the user's files through the bind.
 */
export async function releaseDir(
  dir: string,
  mounts: HostMounts = createHostMounts(),
): Promise<void> {
  const names = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return undefined;
    throw e;
  });
  if (names === undefined) return;
  for (const name of names) {
    const target = join(dir, name);
    // Only a directory (a mount point) is unmounted here (and the unmount itself refuses
    // to follow a symlink).
    if (!(await lstat(target)).isDirectory()) throw new Error(`${target} is not a directory`);
    // Not mounted (a create that failed before its mount): the unmount fails, rmdir decides.
    await mounts.unmount(target).catch(() =>
      // Busy on the host (something has its cwd there): detach it lazily; the
      // container's own copy is unaffected either way.
      mounts.unmount(target, { lazy: true }).catch(() => {}),
    );
    await rmdir(target);
  }
  await rmdir(dir);
}
