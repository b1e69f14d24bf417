import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync } from "node:fs";
import type { DirFiles, DirFilesWriter } from "./dir-files.ts";
import { isTempName } from "./fs-context.ts";
import {
  kindOf,
  type MetadataScan,
  type MetadataScanLimits,
  scanMetadata,
} from "./metadata-scan.ts";
import { isAddressableName, type NameLimits } from "./workspace-path.ts";

// What incremental-scans.ts keeps per root and how it re-lists one directory of it.

const OPEN_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A scan that equals `base` except, at most, at the file paths in `changed`. */
export interface DerivedScan extends MetadataScan {
  derivedFrom?: { readonly base: MetadataScan; readonly changed: ReadonlySet<string> };
}

export type Kind = "file" | "dir";

/** What is known of one root between scans. */
export interface Tracked {
  last: DerivedScan;
  /** The last scan's files by directory (shared with it; never written). */
  files: DirFiles;
  dirIno: Map<string, number>;
  kids: Map<string, Map<string, Kind>>;
  /** Inode → the directories to re-list when it is reported (a file's, or the dir itself). */
  byIno: Map<number, Set<string>>;
  dirty: Set<string>;
  stale: boolean;
  fullAt: number;
  /** Set while the root is being (re)walked: what the feed reports meanwhile, replayed after. */
  collecting: Set<number> | undefined;
}

export interface WalkContext {
  readonly limits: MetadataScanLimits;
  readonly names: NameLimits;
  readonly signal: AbortSignal;
  readonly dev: number;
  /** The next scan's files, and every path whose entry was written or removed. */
  readonly files: DirFilesWriter;
  readonly changed: Set<string>;
}

export function depthOf(path: string): number {
  if (path === "") return 0;
  let n = 1;
  for (const c of path) if (c === "/") n++;
  return n;
}

export function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}

export function join(dir: string, name: string): string {
  if (name === "") return dir;
  return dir === "" ? name : `${dir}/${name}`;
}

export function markDirty(t: Tracked, inos: Iterable<number>): void {
  for (const ino of inos) {
    const dirs = t.byIno.get(ino);
    if (dirs !== undefined) for (const dir of dirs) t.dirty.add(dir);
  }
}

export function indexIno(t: Tracked, ino: number, dir: string): void {
  let dirs = t.byIno.get(ino);
  if (dirs === undefined) {
    dirs = new Set();
    t.byIno.set(ino, dirs);
  }
  dirs.add(dir);
}

/** Built once per full walk from its result; stale entries only cause extra re-lists. */
export function index(t: Tracked): void {
  for (const [dir, ino] of t.dirIno) {
    t.kids.set(dir, new Map());
    indexIno(t, ino, dir);
  }
  for (const dir of t.dirIno.keys()) {
    if (dir !== "") t.kids.get(parentOf(dir))?.set(dir.slice(dir.lastIndexOf("/") + 1), "dir");
  }
  for (const [path, stamp] of t.files) {
    const dir = parentOf(path);
    t.kids.get(dir)?.set(path.slice(dir.length === 0 ? 0 : dir.length + 1), "file");
    indexIno(t, stamp.ino, dir);
  }
}

/** Opens `dir` from the root, never following a symlink; undefined when it is not there. */
export function openTracked(rootFd: number, dir: string): number | undefined {
  let fd = rootFd;
  for (const name of dir === "" ? [] : dir.split("/")) {
    let next: number;
    try {
      next = openSync(`/proc/self/fd/${fd}/${name}`, OPEN_DIR);
    } catch {
      next = -1;
    }
    if (fd !== rootFd) closeSync(fd);
    if (next < 0) return undefined;
    fd = next;
  }
  // "." keeps O_NOFOLLOW from refusing the magic link itself.
  return fd === rootFd ? openSync(`/proc/self/fd/${rootFd}/.`, OPEN_DIR) : fd;
}

function removeSubtree(t: Tracked, path: string, ctx: WalkContext): void {
  const kids = t.kids.get(path);
  if (kids !== undefined) {
    for (const [name, kind] of kids) {
      const child = join(path, name);
      if (kind === "file") {
        ctx.files.delete(child);
        ctx.changed.add(child);
      } else removeSubtree(t, child, ctx);
    }
  }
  t.kids.delete(path);
  t.dirIno.delete(path);
  t.dirty.delete(path);
}

/** Re-lists one indexed directory against what was known of it. */
export async function relist(
  t: Tracked,
  rootFd: number,
  dir: string,
  ctx: WalkContext,
): Promise<void> {
  const { files, changed } = ctx;
  const fd = openTracked(rootFd, dir);
  if (fd === undefined) {
    t.stale = true;
    return;
  }
  try {
    const st = fstatSync(fd);
    if (st.ino !== t.dirIno.get(dir) || st.dev !== ctx.dev) {
      t.stale = true;
      return;
    }
    const base = `/proc/self/fd/${fd}`;
    const old = t.kids.get(dir) ?? new Map<string, Kind>();
    const now = new Map<string, Kind>();
    for (const entry of readdirSync(base, { withFileTypes: true })) {
      const kind = kindOf(entry, base);
      if (kind === "other") continue;
      const { name } = entry;
      if (isTempName(name) || name.includes("\uFFFD") || !isAddressableName(name, ctx.names)) {
        t.stale = true; // a full walk reports it as truncated
        return;
      }
      const path = join(dir, name);
      const was = old.get(name);
      if (kind === "file") {
        if (was === "dir") removeSubtree(t, path, ctx);
        const fst = lstatSync(`${base}/${name}`, { throwIfNoEntry: false });
        if (!fst?.isFile()) {
          if (files.delete(path)) changed.add(path);
          continue;
        }
        files.set(path, {
          size: fst.size,
          mtimeMs: fst.mtimeMs,
          ctimeMs: fst.ctimeMs,
          ino: fst.ino,
        });
        changed.add(path);
        indexIno(t, fst.ino, dir);
        now.set(name, "file");
        continue;
      }
      now.set(name, "dir");
      if (was === "dir") {
        const dst = lstatSync(`${base}/${name}`, { throwIfNoEntry: false });
        if (dst?.isDirectory() && dst.ino === t.dirIno.get(path)) continue;
        removeSubtree(t, path, ctx);
      } else if (was === "file") {
        files.delete(path);
        changed.add(path);
      }
      await walkNew(t, fd, name, path, ctx);
      if (t.stale) return;
    }
    for (const [name, kind] of old) {
      if (now.has(name)) continue;
      const path = join(dir, name);
      if (kind === "file") {
        files.delete(path);
        changed.add(path);
      } else removeSubtree(t, path, ctx);
    }
    t.kids.set(dir, now);
  } finally {
    closeSync(fd);
  }
}

/** A directory new to the root (created, moved in, swapped): walked in full and indexed. */
async function walkNew(
  t: Tracked,
  parentFd: number,
  name: string,
  path: string,
  ctx: WalkContext,
): Promise<void> {
  const depth = depthOf(path);
  const room = ctx.limits.maxEntries - ctx.files.size - t.dirIno.size;
  if (depth > ctx.limits.maxDepth || room <= 0) {
    t.stale = true;
    return;
  }
  let fd: number;
  try {
    fd = openSync(`/proc/self/fd/${parentFd}/${name}`, OPEN_DIR);
  } catch {
    t.stale = true;
    return;
  }
  try {
    const subDirs = new Map<string, number>();
    let foreign = false;
    const scan = await scanMetadata(
      fd,
      { ...ctx.limits, maxDepth: ctx.limits.maxDepth - depth, maxEntries: room },
      ctx.names,
      ctx.signal,
      (rel, dfd) => {
        const st = fstatSync(dfd);
        if (st.dev !== ctx.dev) foreign = true;
        subDirs.set(join(path, rel), st.ino);
      },
    );
    if (scan.truncated || foreign) {
      t.stale = true;
      return;
    }
    for (const [p, ino] of subDirs) {
      t.dirIno.set(p, ino);
      t.kids.set(p, new Map());
      indexIno(t, ino, p);
    }
    for (const p of subDirs.keys()) {
      if (p !== path) t.kids.get(parentOf(p))?.set(p.slice(p.lastIndexOf("/") + 1), "dir");
    }
    for (const [rel, stamp] of scan.files) {
      const p = join(path, rel);
      const dir = parentOf(p);
      ctx.files.set(p, stamp);
      ctx.changed.add(p);
      t.kids.get(dir)?.set(p.slice(dir.length + 1), "file");
      indexIno(t, stamp.ino, dir);
    }
  } finally {
    closeSync(fd);
  }
}
