import type { FileHandle } from "node:fs/promises";
import { normalizeWorkdirPath } from "../../shared/paths/normalize-workdir-path.ts";
import type { CreateRefusal } from "./driver.ts";
import { openDirBeneath } from "./host-dir.ts";

/** Host directories bound into a sandbox, relative to the data root (ARCHITECTURE.md §3). */
export function hostMountComponents(dirname: string) {
  return {
    workspace: ["users", dirname, "workspace"],
    skills: ["skills", "projections", dirname],
  } as const;
}

export type OpenedMountDirs = { workspace: FileHandle; skills: FileHandle };

export type OpenMountDirsResult =
  | { ok: true; dirs: OpenedMountDirs; close(): Promise<void> }
  | { ok: false; reason: CreateRefusal; detail: string };

/**
 * Opens, no-follow from the data root, the two host directories every sandbox binds
 * (both tiers): the uid's UserWorkspace, whose Workdir must exist (the run worker
 * materializes it first, §4.7), and its skill projection (created empty when the user
 * has no skill grant yet: mount an empty one, fail closed, rather than refuse).
 */
export async function openMountDirs(
  dataRoot: string,
  dirname: string,
  workdirPath: string,
): Promise<OpenMountDirsResult> {
  const parts = hostMountComponents(dirname);
  const workspace = await openDirBeneath(dataRoot, parts.workspace);
  if (!workspace.ok) return workspace;
  let keep = false;
  try {
    const workdir = await openDirBeneath(
      `/proc/self/fd/${workspace.handle.fd}`,
      normalizeWorkdirPath(workdirPath).split("/"),
    );
    if (!workdir.ok) return { ...workdir, detail: `workspace/${workdir.detail}` };
    await workdir.handle.close();
    const skills = await openDirBeneath(dataRoot, parts.skills, { create: true });
    if (!skills.ok) return skills;
    keep = true;
    const dirs = { workspace: workspace.handle, skills: skills.handle };
    return {
      ok: true,
      dirs,
      async close() {
        await Promise.all([dirs.workspace.close(), dirs.skills.close()]);
      },
    };
  } finally {
    if (!keep) await workspace.handle.close();
  }
}
