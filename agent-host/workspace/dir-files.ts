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

  constructor(byDir: FilesByDir) {
    this.byDir = byDir;
    let size = 0;
    for (const files of byDir.values()) size += files.size;
    this.size = size;
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
  #size: number;

  constructor(from: DirFiles) {
    this.#byDir = new Map(from.byDir);
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
    return new DirFiles(this.#byDir);
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
