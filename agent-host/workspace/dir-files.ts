import type { MetadataStamp } from "./metadata-scan.ts";

/** Files by directory ("" = the root), each inner map by name. Never mutated once shared. */
export type FilesByDir = ReadonlyMap<string, ReadonlyMap<string, MetadataStamp>>;

/**
 * A scan's `files` as a read-only map by Workdir-relative path, stored by directory so that
 * the next scan shares every directory it did not re-list (incremental-scans.ts): a command
 * that touched one directory of 1,000 costs a copy of 1,000 references, not of 100,000
 * entries.
 */
export class DirFiles implements ReadonlyMap<string, MetadataStamp> {
  readonly byDir: FilesByDir;
  readonly size: number;
  /** Bytes per directory already known (the last scan's, for directories it shares). */
  #known: ReadonlyMap<string, number> | undefined;
  #sums: Map<string, number> | undefined;
  #bytes: number | undefined;

  constructor(byDir: FilesByDir, knownBytes?: ReadonlyMap<string, number>) {
    this.byDir = byDir;
    this.#known = knownBytes;
    let size = 0;
    for (const files of byDir.values()) size += files.size;
    this.size = size;
  }

  /**
   * The sum of the files' sizes (the quota's growth per command, scan-growth.ts): summed
   * once, then per scan only for the directories it re-listed.
   */
  get bytes(): number {
    if (this.#bytes === undefined) {
      const sums = new Map<string, number>();
      let total = 0;
      for (const [dir, files] of this.byDir) {
        let sum = this.#known?.get(dir);
        if (sum === undefined) {
          sum = 0;
          for (const stamp of files.values()) sum += stamp.size;
        }
        sums.set(dir, sum);
        total += sum;
      }
      this.#sums = sums;
      this.#bytes = total;
      this.#known = undefined;
    }
    return this.#bytes;
  }

  /** Bytes per directory, once `bytes` was asked for (for the next scan to reuse). */
  get bytesByDir(): ReadonlyMap<string, number> | undefined {
    return this.#sums ?? this.#known;
  }

  /** The same files, grouped (once) from a flat map. */
  static group(files: ReadonlyMap<string, MetadataStamp>): Map<string, Map<string, MetadataStamp>> {
    const byDir = new Map<string, Map<string, MetadataStamp>>();
    for (const [path, stamp] of files) {
      const slash = path.lastIndexOf("/");
      const dir = slash < 0 ? "" : path.slice(0, slash);
      let inner = byDir.get(dir);
      if (inner === undefined) {
        inner = new Map();
        byDir.set(dir, inner);
      }
      inner.set(path.slice(slash + 1), stamp);
    }
    return byDir;
  }

  get(path: string): MetadataStamp | undefined {
    const slash = path.lastIndexOf("/");
    return this.byDir.get(slash < 0 ? "" : path.slice(0, slash))?.get(path.slice(slash + 1));
  }

  has(path: string): boolean {
    return this.get(path) !== undefined;
  }

  *entries(): MapIterator<[string, MetadataStamp]> {
    for (const [dir, files] of this.byDir) {
      for (const [name, stamp] of files) yield [dir === "" ? name : `${dir}/${name}`, stamp];
    }
  }

  *keys(): MapIterator<string> {
    for (const [path] of this.entries()) yield path;
  }

  *values(): MapIterator<MetadataStamp> {
    for (const files of this.byDir.values()) yield* files.values();
  }

  [Symbol.iterator](): MapIterator<[string, MetadataStamp]> {
    return this.entries();
  }

  forEach(
    fn: (value: MetadataStamp, key: string, map: ReadonlyMap<string, MetadataStamp>) => void,
  ): void {
    for (const [path, stamp] of this.entries()) fn(stamp, path, this);
  }
}

/**
 * The next scan's files, written over the last one's: a directory's map is copied the
 * first time it is written, every other one is shared. `publish` ends the writing.
 */
export class DirFilesWriter {
  readonly #byDir: Map<string, ReadonlyMap<string, MetadataStamp>>;
  readonly #owned = new Map<string, Map<string, MetadataStamp>>();
  readonly #from: DirFiles;
  #size: number;

  constructor(from: DirFiles) {
    this.#byDir = new Map(from.byDir);
    this.#from = from;
    this.#size = from.size;
  }

  get size(): number {
    return this.#size;
  }

  set(path: string, stamp: MetadataStamp): void {
    const [dir, name] = split(path);
    const files = this.#own(dir);
    if (!files.has(name)) this.#size++;
    files.set(name, stamp);
  }

  delete(path: string): boolean {
    const [dir, name] = split(path);
    if (!this.#byDir.get(dir)?.has(name)) return false;
    this.#own(dir).delete(name);
    this.#size--;
    return true;
  }

  publish(): DirFiles {
    for (const [dir, files] of this.#owned) if (files.size === 0) this.#byDir.delete(dir);
    const before = this.#from.bytesByDir;
    if (before === undefined) return new DirFiles(this.#byDir);
    // The shared directories' sums carry over; the written ones are summed again.
    const known = new Map(before);
    for (const dir of this.#owned.keys()) known.delete(dir);
    return new DirFiles(this.#byDir, known);
  }

  #own(dir: string): Map<string, MetadataStamp> {
    let files = this.#owned.get(dir);
    if (files === undefined) {
      files = new Map(this.#byDir.get(dir) ?? []);
      this.#owned.set(dir, files);
      this.#byDir.set(dir, files);
    }
    return files;
  }
}

function split(path: string): [string, string] {
  const slash = path.lastIndexOf("/");
  return [slash < 0 ? "" : path.slice(0, slash), path.slice(slash + 1)];
}
