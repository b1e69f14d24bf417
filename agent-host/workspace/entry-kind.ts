import type { Stats } from "node:fs";

/**
 * What an inode is, as far as the workspace layer cares: only `file` (regular) and `dir`
 * (a real directory) are ever read, listed or copied; `symlink` and `special` (FIFO, socket,
 * character or block device) are refused or hidden.
 */
export type EntryKind = "file" | "dir" | "symlink" | "special";

export function entryKindOf(st: Stats): EntryKind {
  if (st.isFile()) return "file";
  if (st.isDirectory()) return "dir";
  if (st.isSymbolicLink()) return "symlink";
  return "special";
}

/** What listings, stat and search return: only the two kinds the layer exposes. */
export interface EntryInfo {
  readonly name: string;
  readonly type: "file" | "dir";
  /** Bytes for a file; the directory's own size (filesystem-specific) for a dir. */
  readonly size: number;
  readonly mtimeMs: number;
}

export function entryInfoOf(name: string, st: Stats): EntryInfo {
  return {
    name,
    type: st.isDirectory() ? "dir" : "file",
    size: st.size,
    mtimeMs: st.mtimeMs,
  };
}
