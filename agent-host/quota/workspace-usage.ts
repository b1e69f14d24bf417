import { lstat, opendir } from "node:fs/promises";
import { join } from "node:path";

export type WorkspaceUsage = { readonly bytes: number; readonly inodes: number };

/**
 * Bytes (regular files' sizes) and inodes (every entry, the root included) under `root`,
 * measured with lstat: symlinks are counted as entries and never followed, so a link
 * cannot make another tree count (or hide) here. A missing root is an empty workspace.
 * Read-only, so a tree changing during the walk only makes the figure slightly stale.
 */
export async function measureWorkspaceUsage(
  root: string,
  signal: AbortSignal,
): Promise<WorkspaceUsage> {
  let bytes = 0;
  let inodes = 0;
  const pending = [root];
  while (pending.length > 0) {
    signal.throwIfAborted();
    const dir = pending.pop() as string;
    let handle: Awaited<ReturnType<typeof opendir>>;
    try {
      handle = await opendir(dir);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") continue;
      throw error;
    }
    inodes++;
    for await (const entry of handle) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        pending.push(path);
        continue;
      }
      inodes++;
      if (entry.isFile()) {
        try {
          bytes += (await lstat(path)).size;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        }
      }
    }
  }
  return { bytes, inodes };
}
