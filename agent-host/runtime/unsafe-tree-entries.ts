import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

const SETUID_SETGID = 0o6000;

/**
 * Entries of the Runtime Assets tree that break its rule (decision 0105): not owned by
 * root (uid and gid 0), or a file with a setuid or setgid bit. Either one would let a
 * sandbox raise privileges the day a mount lost `nosuid` or a command ran without
 * no-new-privs; the tree is meant to be inert. Paths are tree-relative, sorted; at most
 * `limit` are returned (a report names a few, not thousands).
 */
export async function unsafeTreeEntries(treeDir: string, limit = 10): Promise<string[]> {
  const names = await readdir(treeDir, { recursive: true });
  const found: string[] = [];
  for (const rel of ["", ...names.sort()]) {
    const s = await lstat(join(treeDir, rel)).catch(() => undefined);
    if (s === undefined) continue;
    const why =
      s.uid !== 0 || s.gid !== 0
        ? `owned by ${s.uid}:${s.gid}`
        : !s.isDirectory() && (s.mode & SETUID_SETGID) !== 0
          ? `mode ${(s.mode & 0o7777).toString(8)}`
          : undefined;
    if (why !== undefined) found.push(`${rel === "" ? "." : rel} (${why})`);
    if (found.length >= limit) break;
  }
  return found;
}
