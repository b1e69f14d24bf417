import { createHash } from "node:crypto";

/** Every content hash is written `sha256:<64 hex>`. */
export const CONTENT_HASH_PREFIX = "sha256:";

const SLASH = Buffer.from("/");

interface HashRecord {
  readonly path: Buffer;
  readonly type: "d" | "f";
  readonly exec: boolean;
  readonly size: number;
  readonly digest: Buffer | undefined;
}

/**
 * The content hash of a skill tree (issue 7): it covers every path, every entry's type,
 * each file's exec bit and each file's bytes, and nothing else (not owners, times or the
 * other mode bits, which the projection normalizes to 0444 / 0555 anyway). Two trees with
 * the same hash project to the same bytes.
 *
 * Entries may be added in any order (a directory walk's order is the filesystem's); the
 * records are sorted by path bytes before hashing, so the hash is deterministic. Encoding
 * of one record, all integers big-endian, so no two different trees share a byte stream:
 *
 *   type ('d' | 'f') · u32 path length · path bytes (relative, '/'-separated)
 *   files only:  u8 exec (0 | 1) · u64 size · sha256(file bytes)
 */
export class ContentHashBuilder {
  readonly #records: HashRecord[] = [];

  addDirectory(path: Buffer): void {
    this.#records.push({ path, type: "d", exec: false, size: 0, digest: undefined });
  }

  addFile(path: Buffer, exec: boolean, size: number, digest: Buffer): void {
    this.#records.push({ path, type: "f", exec, size, digest });
  }

  get entries(): number {
    return this.#records.length;
  }

  digest(): string {
    const records = [...this.#records].sort((a, b) => Buffer.compare(a.path, b.path));
    const hash = createHash("sha256");
    const head = Buffer.alloc(5);
    const tail = Buffer.alloc(9);
    for (const record of records) {
      head.write(record.type, 0, "latin1");
      head.writeUInt32BE(record.path.byteLength, 1);
      hash.update(head);
      hash.update(record.path);
      if (record.type === "f" && record.digest !== undefined) {
        tail.writeUInt8(record.exec ? 1 : 0, 0);
        tail.writeBigUInt64BE(BigInt(record.size), 1);
        hash.update(tail);
        hash.update(record.digest);
      }
    }
    return CONTENT_HASH_PREFIX + hash.digest("hex");
  }
}

/** `parent/name` as bytes; `name` alone at the root. */
export function childPath(parent: Buffer | undefined, name: Buffer): Buffer {
  return parent === undefined ? name : Buffer.concat([parent, SLASH, name]);
}

/** Whether a mode counts as executable: any of the three exec bits (kept as 0555 when projected). */
export function isExecutableMode(mode: number): boolean {
  return (mode & 0o111) !== 0;
}
