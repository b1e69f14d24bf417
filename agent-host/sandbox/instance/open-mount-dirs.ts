import type { FileHandle } from "node:fs/promises";
import { normalizeWorkdirPath } from "../../../shared/paths/normalize-workdir-path.ts";
import type { CreateRefusal } from "../driver.ts";
import { openDirBeneath } from "./host-dir.ts";

/** Host directories bound into a sandbox, relative to the data root (docs/architecture.md §3). */
export function hostMountComponents(dirname: string) {
  return {
    workspace: ["users", dirname, "workspace"],
    skills: ["skills", "projections", dirname],
  } as const;
}

/** The Workdir is bound on its own only in the `workdir` file view; it is opened either way. */
export type OpenedMountDirs = { workspace: FileHandle; skills: FileHandle; workdir: FileHandle };

export type OpenMountDirsResult =
  | { ok: true; dirs: OpenedMountDirs; close(): Promise<void> }
  | { ok: false; reason: CreateRefusal; detail: string };

/**
 * Opens, no-follow from the data root, the host directories a sandbox binds (both
 * tiers): the uid's UserWorkspace, its Workdir, which must exist (the run worker
 * materializes it first, §4.7) and is bound on its own in the `workdir` file view, and
 * the skill projection (created empty when the user has no skill grant yet: mount an
 * empty one, fail closed, rather than refuse).
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
    try {
      const skills = await openDirBeneath(dataRoot, parts.skills, { create: true });
      if (!skills.ok) return skills;
      keep = true;
      const dirs = { workspace: workspace.handle, skills: skills.handle, workdir: workdir.handle };
      return {
        ok: true,
        dirs,
        async close() {
          await Promise.all(Object.values(dirs).map((h) => h.close()));
        },
      };
    } finally {
      if (!keep) await workdir.handle.close();
    }
  } finally {
    if (!keep) await workspace.handle.close();
  }
}
