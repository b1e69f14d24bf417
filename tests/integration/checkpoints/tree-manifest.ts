import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Every entry under `root` (not `root` itself unless `withRoot`): path, kind, size, mode,
 * nanosecond mtime and, for a file, the SHA-256 of its bytes. Two trees are equal for a
 * restore when their manifests are.
 */
export function treeManifest(root: string, withRoot = false): string[] {
  const lines: string[] = [];
  if (withRoot) lines.push(lineOf(".", root));
  walk(root, "", lines);
  return lines.sort();
}

function walk(dir: string, prefix: string, lines: string[]): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const rel = prefix === "" ? name : `${prefix}/${name}`;
    lines.push(lineOf(rel, path));
    if (lstatSync(path).isDirectory()) walk(path, rel, lines);
  }
}

function lineOf(rel: string, path: string): string {
  const st = lstatSync(path, { bigint: true });
  const kind = st.isDirectory()
    ? "dir"
    : st.isFile()
      ? "file"
      : st.isSymbolicLink()
        ? "link"
        : "special";
  const hash =
    kind === "file"
      ? createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16)
      : "-";
  const size = kind === "file" ? st.size : 0n;
  return `${rel} ${kind} ${size} ${(st.mode & 0o7777n).toString(8)} ${st.mtimeNs} ${hash}`;
}
