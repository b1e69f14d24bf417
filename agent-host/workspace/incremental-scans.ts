import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync } from "node:fs";
import { DirFiles, DirFilesWriter } from "./dir-files.ts";
import type { FanotifyFeed } from "./fanotify-feed.ts";
import { isTempName } from "./fs-context.ts";
import {
  kindOf,
  type MetadataScan,
  type MetadataScanLimits,
  scanMetadata,
} from "./metadata-scan.ts";
import { isAddressableName, type NameLimits } from "./workspace-path.ts";

const OPEN_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

export interface IncrementalScansDeps {
  readonly feed: FanotifyFeed;
  /** A full walk at least this often per root: bounds how late a shared-mmap write is seen. */
  readonly fullWalkEveryMs: number;
  /** Roots followed at once; the least recently scanned is dropped (its next scan walks). */
  readonly maxRoots: number;
  /** The queue is drained this often, so it does not overflow between commands. */
  readonly drainIntervalMs: number;
  readonly now?: () => number;
}

/** A scan that equals `base` except, at most, at the file paths in `changed`. */
export interface DerivedScan extends MetadataScan {
  derivedFrom?: { readonly base: MetadataScan; readonly changed: ReadonlySet<string> };
}

type Kind = "file" | "dir";

/** What is known of one root between scans. */
interface Tracked {
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

/**
 * Per-command metadata scans that cost what changed (docs/decisions/0156). A root is walked
 * in full once (scanMetadata, unchanged) and its directories' and files' inodes indexed;
 * the filesystem's fanotify feed then names every inode touched, by anyone, through any
 * name (hard links outside the Workdir included), and the next scan re-lists only the
 * directories holding a touched inode (and walks directories new to the root in full).
 * The result is what scanMetadata would return. It walks in full again whenever it cannot
 * be sure: first scan, the feed lost events, a re-listed directory is not the indexed one
 * (swapped, removed), a name a full walk would mark truncated, a bound reached, the root on
 * another filesystem or holding a mount, an abort mid-update, and every `fullWalkEveryMs`
 * (writes through a shared mapping raise no event; the period bounds how late they show).
 */
export class IncrementalScans {
  readonly #deps: IncrementalScansDeps;
  readonly #roots = new Map<string, Tracked>();
  /** Roots being walked in full, not yet indexed: they collect what the feed reports. */
  readonly #walking = new Set<Tracked>();
  readonly #busy = new Map<string, Promise<void>>();
  readonly #timer: NodeJS.Timeout;

  constructor(deps: IncrementalScansDeps) {
    this.#deps = deps;
    this.#timer = setInterval(() => this.#drain(), deps.drainIntervalMs);
    this.#timer.unref();
  }

  /** scanMetadata's signature, so WorkspaceFs can use it in its place. */
  readonly scan = async (
    dirFd: number,
    limits: MetadataScanLimits,
    names: NameLimits,
    signal: AbortSignal,
  ): Promise<MetadataScan> => {
    const st = fstatSync(dirFd);
    if (st.dev !== this.#deps.feed.dev) return scanMetadata(dirFd, limits, names, signal);
    const key = `${st.dev}:${st.ino}`;
    // One scan of a root at a time (the lease already orders commands on one root): an
    // update awaits in the middle and must not interleave with another of the same root.
    const previous = this.#busy.get(key) ?? Promise.resolve();
    const mine = previous.then(() => this.#scanRoot(key, dirFd, limits, names, signal));
    const settled = mine.then(
      () => {},
      () => {},
    );
    this.#busy.set(key, settled);
    void settled.then(() => {
      if (this.#busy.get(key) === settled) this.#busy.delete(key);
    });
    return mine;
  };

  async #scanRoot(
    key: string,
    dirFd: number,
    limits: MetadataScanLimits,
    names: NameLimits,
    signal: AbortSignal,
  ): Promise<MetadataScan> {
    signal.throwIfAborted();
    this.#drain();
    const now = (this.#deps.now ?? Date.now)();
    let t = this.#roots.get(key);
    if (t === undefined || t.stale || now - t.fullAt >= this.#deps.fullWalkEveryMs) {
      t = await this.#fullWalk(dirFd, limits, names, signal, now);
    } else {
      await this.#update(t, dirFd, limits, names, signal, now);
    }
    // Most recently scanned last; the oldest roots beyond the bound are forgotten.
    this.#roots.delete(key);
    this.#roots.set(key, t);
    for (const old of this.#roots.keys()) {
      if (this.#roots.size <= this.#deps.maxRoots) break;
      this.#roots.delete(old);
    }
    return t.last;
  }

  close(): void {
    clearInterval(this.#timer);
    this.#roots.clear();
  }

  #drain(): void {
    const { inos, lost } = this.#deps.feed.drain();
    for (const t of [...this.#roots.values(), ...this.#walking]) {
      if (lost) t.stale = true;
      if (t.collecting !== undefined) for (const ino of inos) t.collecting.add(ino);
      else markDirty(t, inos);
    }
  }

  async #fullWalk(
    dirFd: number,
    limits: MetadataScanLimits,
    names: NameLimits,
    signal: AbortSignal,
    now: number,
  ): Promise<Tracked> {
    const dirIno = new Map<string, number>();
    let foreign = false;
    const t: Tracked = {
      last: { files: new Map(), dirs: new Set(), complete: new Set(), truncated: true },
      files: new DirFiles(new Map()),
      dirIno,
      kids: new Map(),
      byIno: new Map(),
      dirty: new Set(),
      stale: false,
      fullAt: now,
      collecting: new Set(),
    };
    // Registered before the walk: what changes while it runs is re-listed next time.
    this.#walking.add(t);
    try {
      const scan = await scanMetadata(dirFd, limits, names, signal, (rel, fd) => {
        const st = fstatSync(fd);
        if (st.dev !== this.#deps.feed.dev) foreign = true;
        dirIno.set(rel, st.ino);
      });
      t.last = scan;
      t.files = new DirFiles(DirFiles.group(scan.files));
      t.stale = t.stale || foreign || scan.truncated;
      if (!t.stale) index(t);
      const pending = t.collecting ?? new Set<number>();
      t.collecting = undefined;
      markDirty(t, pending);
      return t;
    } finally {
      this.#walking.delete(t);
    }
  }

  async #update(
    t: Tracked,
    rootFd: number,
    limits: MetadataScanLimits,
    names: NameLimits,
    signal: AbortSignal,
    now: number,
  ): Promise<void> {
    if (t.dirty.size === 0) return;
    const work = [...t.dirty].sort((a, b) => depthOf(a) - depthOf(b));
    t.dirty = new Set();
    t.collecting = new Set();
    const before = t.last;
    const files = new DirFilesWriter(t.files);
    const changed = new Set<string>();
    const ctx: WalkContext = { limits, names, signal, dev: this.#deps.feed.dev, files, changed };
    try {
      for (const dir of work) {
        if (t.stale) break;
        if (!t.dirIno.has(dir)) continue; // removed with an ancestor re-listed before it
        await relist(t, rootFd, dir, ctx);
      }
      if (files.size + t.dirIno.size > limits.maxEntries) t.stale = true;
    } catch (error) {
      t.stale = true;
      throw error;
    } finally {
      const pending = t.collecting;
      t.collecting = undefined;
      markDirty(t, pending);
    }
    if (t.stale) {
      // The next scan walks in full; this one must still be exact: walk now.
      const fresh = await this.#fullWalk(rootFd, limits, names, signal, now);
      Object.assign(t, fresh);
      return;
    }
    t.files = files.publish();
    const dirs = new Set(t.dirIno.keys());
    before.derivedFrom = undefined; // only the newest link is kept (no chain of old scans)
    t.last = {
      files: t.files,
      dirs,
      complete: dirs,
      truncated: false,
      derivedFrom: { base: before, changed },
    };
  }
}

interface WalkContext {
  readonly limits: MetadataScanLimits;
  readonly names: NameLimits;
  readonly signal: AbortSignal;
  readonly dev: number;
  /** The next scan's files, and every path whose entry was written or removed. */
  readonly files: DirFilesWriter;
  readonly changed: Set<string>;
}

function depthOf(path: string): number {
  if (path === "") return 0;
  let n = 1;
  for (const c of path) if (c === "/") n++;
  return n;
}

function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}

function join(dir: string, name: string): string {
  if (name === "") return dir;
  return dir === "" ? name : `${dir}/${name}`;
}

function markDirty(t: Tracked, inos: Iterable<number>): void {
  for (const ino of inos) {
    const dirs = t.byIno.get(ino);
    if (dirs !== undefined) for (const dir of dirs) t.dirty.add(dir);
  }
}

function indexIno(t: Tracked, ino: number, dir: string): void {
  let dirs = t.byIno.get(ino);
  if (dirs === undefined) {
    dirs = new Set();
    t.byIno.set(ino, dirs);
  }
  dirs.add(dir);
}

/** Built once per full walk from its result; stale entries only cause extra re-lists. */
function index(t: Tracked): void {
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
function openTracked(rootFd: number, dir: string): number | undefined {
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
async function relist(t: Tracked, rootFd: number, dir: string, ctx: WalkContext): Promise<void> {
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
