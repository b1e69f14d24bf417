import { createHash } from "node:crypto";
import { chmod, lstat, mkdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { HostMounts } from "../instance/host-mounts.ts";

/**
 * Where a state directory below a parent others cannot search is made reachable: root's,
 * 0711, under /run (which every account may search). Decision 0144.
 */
export const STATE_ALIAS_ROOT = "/run/workcell/state-aliases";

/** Where `dir` (a real path) is bound when it needs an alias: one name per directory. */
export function stateDirAliasPath(dir: string, aliasRoot: string = STATE_ALIAS_ROOT): string {
  return join(aliasRoot, createHash("sha256").update(dir).digest("hex").slice(0, 16));
}

/** The first parent of `dir` (a real path) that others may not search, if any. */
export async function unsearchableParent(dir: string): Promise<string | undefined> {
  for (let parent = dirname(dir); ; parent = dirname(parent)) {
    if (((await stat(parent)).mode & 0o001) === 0) return parent;
    if (parent === "/") return undefined;
  }
}

/**
 * The path bwrap is given for the state directory `dir` (a real path, root's 0711). bwrap
 * runs as each sandbox's own uid and resolves its bind sources as paths (bubblewrap 0.8),
 * so it must be able to search every parent. When one of `dir`'s parents is closed to
 * others (a 0700 state root), `dir` itself is bind-mounted (agent-host is root: its own
 * path walk passes) onto `<aliasRoot>/<hash of dir>`, whose parents all are searchable, and
 * that alias is the path every generation uses. The closed parent stays closed: the alias
 * exposes only the state directory, whose own mode (0711) and its generations' (0010, one
 * owner gid each) are the boundary, as under the default location. An alias left by an
 * earlier start (the same directory already bound there) is reused. Throws when the alias
 * root is not usable (not root's, or below a closed parent itself).
 */
export async function reachableStateDir(
  dir: string,
  mounts: Pick<HostMounts, "bind">,
  aliasRoot: string = STATE_ALIAS_ROOT,
): Promise<string> {
  if ((await unsearchableParent(dir)) === undefined) return dir;
  await mkdir(aliasRoot, { recursive: true, mode: 0o711 });
  const root = await lstat(aliasRoot);
  if (!root.isDirectory() || root.uid !== 0) {
    throw new Error(`${aliasRoot} must be a directory of root's (found uid ${root.uid})`);
  }
  if ((root.mode & 0o777) !== 0o711) await chmod(aliasRoot, 0o711);
  const closed = await unsearchableParent(aliasRoot);
  if (closed !== undefined) {
    throw new Error(`${closed}, a parent of ${aliasRoot}, is closed to others as well`);
  }
  const alias = stateDirAliasPath(dir, aliasRoot);
  await mkdir(alias, { mode: 0o711 }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "EEXIST") throw error;
  });
  const target = await stat(dir);
  const same = async () => {
    const found = await stat(alias);
    return found.dev === target.dev && found.ino === target.ino;
  };
  if (!(await same())) mounts.bind(dir, alias);
  if (!(await same())) throw new Error(`${alias} does not show ${dir} after binding it there`);
  return alias;
}
