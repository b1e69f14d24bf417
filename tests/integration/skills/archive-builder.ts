// Builds the archives the import tests feed to the extractor, including the malicious
// ones no well-behaved tool would write: the zip writer is hand-made so every header
// field (names, Unix type bits, declared sizes) can lie; tar entries come from
// tar-stream's packer, which writes any entry type it is given.
import { constants, crc32, createDeflateRaw, deflateRawSync, gzipSync } from "node:zlib";
import * as tar from "tar-stream";

export interface ZipEntry {
  readonly name: string;
  /** Contents (files only). */
  readonly data?: Buffer | string;
  /** Unix mode including type bits, e.g. 0o100755, 0o040755, 0o120777 (symlink). */
  readonly unixMode?: number;
  /** Store instead of deflate. */
  readonly stored?: boolean;
  /** Precompressed raw-deflate data with its real size and crc (bombs). */
  readonly raw?: { readonly deflated: Buffer; readonly size: number; readonly crc: number };
  /** Lie about the uncompressed size in both headers. */
  readonly declaredSize?: number;
}

const UNIX = 3;
const UTF8_FLAG = 0x0800;

/** A zip archive, every field as given. */
export function buildZip(entries: readonly ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, "utf8");
    const plain = entry.data === undefined ? Buffer.alloc(0) : Buffer.from(entry.data);
    const method = entry.raw !== undefined || (!entry.stored && plain.length > 0) ? 8 : 0;
    const body = entry.raw?.deflated ?? (method === 8 ? deflateRawSync(plain) : plain);
    const crc = entry.raw?.crc ?? crc32(plain);
    const size = entry.declaredSize ?? entry.raw?.size ?? plain.length;
    const defaultMode = entry.name.endsWith("/") ? 0o040755 : 0o100644;
    const external = ((entry.unixMode ?? defaultMode) << 16) >>> 0;

    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(UTF8_FLAG, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc >>> 0, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(size >>> 0, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, body);

    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((UNIX << 8) | 20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(UTF8_FLAG, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc >>> 0, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(size >>> 0, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(external, 38);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

export type TarEntry = tar.Header extends infer H
  ? Partial<H> & { name: string; data?: string | Buffer }
  : never;

/** A tar.gz archive with the given entries (any type tar-stream knows). */
export async function buildTarGz(entries: readonly TarEntry[]): Promise<Buffer> {
  return gzipSync(await buildTar(entries));
}

export async function buildTar(entries: readonly TarEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const chunk of pack as unknown as AsyncIterable<Buffer>) chunks.push(chunk);
  })();
  for (const { data, ...header } of entries) {
    const type = header.type ?? "file";
    const body = data === undefined ? undefined : Buffer.from(data);
    await new Promise<void>((resolve, reject) => {
      const callback = (err?: Error | null) => (err ? reject(err) : resolve());
      const full = { mode: type === "directory" ? 0o755 : 0o644, ...header, type };
      // No body: the entry is complete with its header (directories, links, devices).
      if (body === undefined) pack.entry(full, callback).end(Buffer.alloc(0));
      else pack.entry(full, body, callback);
    });
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** Raw deflate of `bytes` zero bytes, streamed (1 GiB of zeros deflates to about 1 MiB). */
export async function deflatedZeros(
  bytes: number,
): Promise<{ deflated: Buffer; size: number; crc: number }> {
  const chunk = Buffer.alloc(1024 * 1024);
  const deflate = createDeflateRaw({ level: constants.Z_BEST_COMPRESSION });
  const out: Buffer[] = [];
  deflate.on("data", (c: Buffer) => out.push(c));
  const ended = new Promise((resolve) => deflate.on("end", resolve));
  let crc = 0;
  for (let written = 0; written < bytes; written += chunk.length) {
    const part = chunk.subarray(0, Math.min(chunk.length, bytes - written));
    crc = crc32(part, crc);
    if (!deflate.write(part)) await new Promise((resolve) => deflate.once("drain", resolve));
  }
  deflate.end();
  await ended;
  return { deflated: Buffer.concat(out), size: bytes, crc };
}

/** One gzip member around precompressed raw-deflate data (gunzip reads concatenated members). */
export function gzipMember(raw: { deflated: Buffer; size: number; crc: number }): Buffer {
  const header = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(raw.crc >>> 0, 0);
  trailer.writeUInt32LE(raw.size % 2 ** 32, 4);
  return Buffer.concat([header, raw.deflated, trailer]);
}

/**
 * A tar.gz whose one file is `zeros` zero bytes: the tar header and the end blocks are
 * gzip members of their own, the contents reuse a precompressed member.
 */
export async function tarGzBomb(
  name: string,
  zeros: { deflated: Buffer; size: number; crc: number },
): Promise<Buffer> {
  const skill = await buildTar([{ name: "SKILL.md", data: "---\ndescription: bomb\n---\n" }]);
  // buildTar ends with two zero blocks; drop them and append our entry by hand.
  const head = skill.subarray(0, skill.length - 1024);
  const header = ustarHeader(name, zeros.size);
  const padding = (512 - (zeros.size % 512)) % 512;
  return Buffer.concat([
    gzipSync(Buffer.concat([head, header])),
    gzipMember(zeros),
    gzipSync(Buffer.alloc(padding + 1024)),
  ]);
}

/** A ustar header block for a regular file of `size` bytes. */
export function ustarHeader(name: string, size: number): Buffer {
  const block = Buffer.alloc(512);
  const field = (value: string, at: number, width: number) =>
    block.write(value.padEnd(width, "\0"), at, width, "latin1");
  const octal = (value: number, width: number) => `${value.toString(8).padStart(width - 1, "0")}\0`;
  field(name, 0, 100);
  field(octal(0o644, 8), 100, 8);
  field(octal(0, 8), 108, 8);
  field(octal(0, 8), 116, 8);
  field(octal(size, 12), 124, 12);
  field(octal(0, 12), 136, 12);
  block.write("        ", 148, 8, "latin1");
  block.write("0", 156, 1, "latin1");
  field("ustar\0", 257, 6);
  field("00", 263, 2);
  let sum = 0;
  for (const byte of block) sum += byte;
  field(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8);
  return block;
}
