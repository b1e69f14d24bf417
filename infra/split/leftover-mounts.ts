import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { HostMounts } from "../../agent-host/sandbox/instance/host-mounts.ts";
import { stateDirAliasPath } from "../../agent-host/sandbox/process/state-dir-alias.ts";

// A node killed with SIGKILL (the node-loss tests and bench) leaves its process tier's
// mounts behind: the warm pool's blanks, its generations' tmpfs and the state directory's
// alias. Its next start would drain them (decision 0185); a split deployment stopped without
// that start removes them itself, or they outlive it on the host (a later run's check of
// the mount table found them).

/** How deep below the state root a node's state directory can be (root/<node>/<node>). */
const STATE_DIR_DEPTH = 2;

/** Lazily unmounts every mount at or below `stateRoot`'s directories and their aliases. */
export async function unmountLeftovers(
  stateRoot: string,
  mounts: Pick<HostMounts, "unmount">,
): Promise<void> {
  const dirs = await directoriesBelow(stateRoot, STATE_DIR_DEPTH);
  const roots = [stateRoot, ...[stateRoot, ...dirs].map((dir) => stateDirAliasPath(dir))];
  const points = (await readFile("/proc/self/mountinfo", "utf8"))
    .split("\n")
    .map((line) => unescapeMountPath(line.split(" ")[4] ?? ""))
    .filter((point) => roots.some((root) => point === root || point.startsWith(`${root}/`)));
  // Deepest first, so each parent is free when its turn comes.
  for (const point of points.sort((a, b) => b.length - a.length)) {
    await mounts.unmount(point, { lazy: true }).catch(() => {});
  }
}

async function directoriesBelow(dir: string, depth: number): Promise<string[]> {
  if (depth === 0) return [];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const found: string[] = [];
  for (const entry of entries.filter((e) => e.isDirectory())) {
    const path = join(dir, entry.name);
    found.push(path, ...(await directoriesBelow(path, depth - 1)));
  }
  return found;
}

/** mountinfo escapes space, tab, newline and backslash as octal (\040 …). */
function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) =>
    String.fromCharCode(Number.parseInt(octal, 8)),
  );
}
