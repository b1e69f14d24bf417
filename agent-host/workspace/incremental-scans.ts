import { fstatSync } from "node:fs";
import { DirFiles, DirFilesWriter } from "./dir-files.ts";
import type { FanotifyFeed } from "./fanotify-feed.ts";
import { type MetadataScan, type MetadataScanLimits, scanMetadata } from "./metadata-scan.ts";
import {
  depthOf,
  index,
  markDirty,
  relist,
  type Tracked,
  type WalkContext,
} from "./tracked-root.ts";
import type { NameLimits } from "./workspace-path.ts";

export type { DerivedScan } from "./tracked-root.ts";

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
  /** Results of `peek`: the next scan derives from what the peek derived from. */
  readonly #peeks = new WeakSet<MetadataScan>();
  readonly #timer: NodeJS.Timeout;

  constructor(deps: IncrementalScansDeps) {
    this.#deps = deps;
    this.#timer = setInterval(() => this.#drain(), deps.drainIntervalMs);
    this.#timer.unref();
  }

  /** scanMetadata's signature, so WorkspaceFs can use it in its place. */
  readonly scan = (
    dirFd: number,
    limits: MetadataScanLimits,
    names: NameLimits,
    signal: AbortSignal,
  ): Promise<MetadataScan> => this.#serialized(dirFd, limits, names, signal, false);

  /**
   * A scan taken while a command runs (the quota watch, decision 0163): what `scan` would
   * return, but it skips the periodic full walk (the command's after-scan takes it) and is
   * transparent to the change batch: the next scan derives from the scan this one derived
   * from, with both changed sets, so the batch's diff still compares only changed paths.
   */
  readonly peek = (
    dirFd: number,
    limits: MetadataScanLimits,
    names: NameLimits,
    signal: AbortSignal,
  ): Promise<MetadataScan> => this.#serialized(dirFd, limits, names, signal, true);

  async #serialized(
    dirFd: number,
    limits: MetadataScanLimits,
    names: NameLimits,
    signal: AbortSignal,
    peek: boolean,
  ): Promise<MetadataScan> {
    const st = fstatSync(dirFd);
    if (st.dev !== this.#deps.feed.dev) return scanMetadata(dirFd, limits, names, signal);
    const key = `${st.dev}:${st.ino}`;
    // One scan of a root at a time (the lease already orders commands on one root): an
    // update awaits in the middle and must not interleave with another of the same root.
    const previous = this.#busy.get(key) ?? Promise.resolve();
    const mine = previous.then(() => this.#scanRoot(key, dirFd, limits, names, signal, peek));
    const settled = mine.then(
      () => {},
      () => {},
    );
    this.#busy.set(key, settled);
    void settled.then(() => {
      if (this.#busy.get(key) === settled) this.#busy.delete(key);
    });
    return mine;
  }

  async #scanRoot(
    key: string,
    dirFd: number,
    limits: MetadataScanLimits,
    names: NameLimits,
    signal: AbortSignal,
    peek: boolean,
  ): Promise<MetadataScan> {
    signal.throwIfAborted();
    this.#drain();
    const now = (this.#deps.now ?? Date.now)();
    let t = this.#roots.get(key);
    const prior = t?.last;
    const due = !peek && now - (t?.fullAt ?? 0) >= this.#deps.fullWalkEveryMs;
    if (t === undefined || t.stale || due) {
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
    // Only a result this peek made is transparent (an unchanged root returns the last scan).
    if (!peek) this.#peeks.delete(t.last);
    else if (t.last !== prior) this.#peeks.add(t.last);
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
    // After a peek the new scan derives from the peek's own base (see `peek`).
    const via = this.#peeks.has(before) ? before.derivedFrom : undefined;
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
      derivedFrom:
        via === undefined
          ? { base: before, changed }
          : { base: via.base, changed: new Set([...via.changed, ...changed]) },
    };
  }
}
