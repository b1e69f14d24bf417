import type { FileHandle } from "node:fs/promises";
import { normalizeWorkdirPath } from "../../../shared/paths/normalize-workdir-path.ts";
import type { CreateRefusal } from "../driver.ts";
import { type OpenDirResult, openDirBeneath } from "./host-dir.ts";
import { type HostDir, MOUNT_TABLE, type MountKey } from "./mount-table.ts";

/** The Workdir is bound on its own only in the `workdir` file view; it is opened either way. */
export type OpenedMountDirs = { workspace: FileHandle; skills: FileHandle; workdir: FileHandle };

export type OpenMountDirsResult =
  | { ok: true; dirs: OpenedMountDirs; close(): Promise<void> }
  | { ok: false; reason: CreateRefusal; detail: string };

/**
 * Opens, no-follow from the data root, the host directories a sandbox binds (both
 * tiers): the mount table's rows with a host directory, in table order (mount-table.ts).
 * They are the uid's UserWorkspace, its Workdir, which must exist (the run worker
 * materializes it first, §4.7) and is bound on its own in the `workdir` file view, and
 * the skill projection (created empty when the user has no skill grant yet: mount an
 * empty one, fail closed, rather than refuse).
 */
export async function openMountDirs(
  dataRoot: string,
  dirname: string,
  workdirPath: string,
): Promise<OpenMountDirsResult> {
  const workdir = normalizeWorkdirPath(workdirPath);
  const handles: Partial<Record<MountKey, FileHandle>> = {};
  const close = async () => {
    await Promise.all(Object.values(handles).map((h) => h.close()));
  };
  let keep = false;
  try {
    for (const row of MOUNT_TABLE) {
      if (row.hostDir === undefined) continue;
      const opened = await openHostDir(dataRoot, handles.workspace, row.hostDir, [
        dirname,
        workdir,
      ]);
      if (!opened.ok) return opened;
      handles[row.key] = opened.handle;
    }
    const { workspace, skills, workdir: workdirHandle } = handles;
    if (!workspace || !skills || !workdirHandle) {
      throw new Error("the mount table must open the workspace, workdir and skills directories");
    }
    keep = true;
    return { ok: true, dirs: { workspace, skills, workdir: workdirHandle }, close };
  } finally {
    if (!keep) await close();
  }
}

/** One row's host directory: from the data root, or beneath the UserWorkspace opened first. */
async function openHostDir(
  dataRoot: string,
  workspace: FileHandle | undefined,
  dir: HostDir,
  [dirname, workdirPath]: [string, string],
): Promise<OpenDirResult> {
  const parts = dir.parts(dirname, workdirPath);
  if (dir.beneath === "dataRoot") {
    return openDirBeneath(dataRoot, parts, dir.create ? { create: true } : {});
  }
  if (workspace === undefined) {
    throw new Error("a directory beneath the UserWorkspace comes after it in the mount table");
  }
  const opened = await openDirBeneath(`/proc/self/fd/${workspace.fd}`, parts);
  return opened.ok ? opened : { ...opened, detail: `workspace/${opened.detail}` };
}
