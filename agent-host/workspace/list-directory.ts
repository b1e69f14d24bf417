import type { Stats } from "node:fs";
import { type EntryInfo, entryInfoOf, entryKindOf } from "./entry-kind.ts";
import { type ErrnoErrorContext, errnoError } from "./errno-error.ts";
import { displayPath, type FsContext, isTempName, openDirectory, withFd } from "./fs-context.ts";
import { Errno } from "./syscalls.ts";
import { isAddressableName } from "./workspace-path.ts";

export interface ListResult {
  /** Regular files and real directories, sorted by name. */
  readonly items: EntryInfo[];
  /** True when the directory had more entries than `maxEntries` allowed to read. */
  readonly truncated: boolean;
}

export interface ListOptions {
  readonly maxEntries?: number;
  readonly signal?: AbortSignal;
}

/**
 * Lists one directory. Only regular files and real directories are shown: symlinks, FIFOs,
 * sockets and devices are hidden (so a client cannot be lured into following or opening
 * one), as are names this layer cannot address (not UTF-8, control characters) and the
 * layer's own in-flight temp files. The bound applies to entries read, hidden ones included,
 * so a directory stuffed with junk cannot make a listing unbounded.
 */
export function listDirectory(
  ctx: FsContext,
  rootFd: number,
  names: readonly string[],
  options: ListOptions = {},
): ListResult {
  options.signal?.throwIfAborted();
  const errCtx = { op: "list", path: displayPath(names) };
  const maxEntries = options.maxEntries ?? ctx.limits.maxListEntries;
  const dirfd = openDirectory(ctx, rootFd, names, errCtx, { finalFileCode: "invalid_request" });
  return withFd(ctx, dirfd, (fd) => {
    const { entries, truncated } = readVisibleEntries(ctx, fd, maxEntries, errCtx);
    const items = entries.map((e) => entryInfoOf(e.name, e.stats));
    items.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { items, truncated };
  });
}

export interface VisibleEntry {
  readonly name: string;
  readonly stats: Stats;
}

/**
 * Reads up to `maxEntries` raw entries of an open directory and keeps the visible ones
 * (see listDirectory), each lstat-ed by name inside the held directory, never followed.
 */
export function readVisibleEntries(
  ctx: FsContext,
  dirfd: number,
  maxEntries: number,
  errCtx: ErrnoErrorContext,
): { entries: VisibleEntry[]; truncated: boolean; read: number } {
  const listed = ctx.sys.readdirAt(dirfd, maxEntries);
  if (!listed.ok) throw errnoError(listed.errno, errCtx);
  const entries: VisibleEntry[] = [];
  for (const raw of listed.value.names) {
    const name = decodeName(raw);
    if (name === undefined || isTempName(name) || !isAddressableName(name, ctx.limits)) continue;
    const st = ctx.sys.lstatAt(dirfd, name);
    if (!st.ok) {
      if (st.errno === Errno.ENOENT) continue; // removed since readdir
      throw errnoError(st.errno, errCtx);
    }
    const kind = entryKindOf(st.value);
    if (kind === "file" || kind === "dir") entries.push({ name, stats: st.value });
  }
  return { entries, truncated: listed.value.truncated, read: listed.value.names.length };
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** The name as a string, or undefined when its bytes are not UTF-8 (it could not round-trip). */
function decodeName(raw: Buffer): string | undefined {
  try {
    return strictUtf8.decode(raw);
  } catch {
    return undefined;
  }
}
