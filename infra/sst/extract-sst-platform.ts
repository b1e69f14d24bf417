// Copies the `platform/` tree that the SST CLI embeds in its binary (Go embed.FS) out to a
// folder, so that sst.config.ts can be type-checked against SST's own component sources
// without running `sst install` (which downloads Pulumi and its providers from outside the
// npm registry). Usage: node infra/sst/extract-sst-platform.ts <sst binary> <out dir>
//
// How: an embed.FS is a sorted table of {name string, data string, hash [16]byte} entries,
// 48 bytes each on 64-bit targets, whose strings point into the binary's read-only data.
// We find the entry of one file we know is there, walk the table both ways while entries
// stay well-formed, and write every file out.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";

const ENTRY_BYTES = 48;
const KNOWN_FILE = "src/components/aws/function.ts";

type Section = { addr: bigint; offset: bigint; size: bigint };

function sections(bin: Buffer): Section[] {
  if (bin.readUInt32BE(0) !== 0x7f454c46 || bin[4] !== 2)
    throw new Error("not a 64-bit ELF binary");
  const shoff = bin.readBigUInt64LE(0x28);
  const shentsize = bin.readUInt16LE(0x3a);
  const shnum = bin.readUInt16LE(0x3c);
  const out: Section[] = [];
  for (let i = 0; i < shnum; i++) {
    const at = Number(shoff) + i * shentsize;
    out.push({
      addr: bin.readBigUInt64LE(at + 0x10),
      offset: bin.readBigUInt64LE(at + 0x18),
      size: bin.readBigUInt64LE(at + 0x20),
    });
  }
  return out;
}

export function extractSstPlatform(binaryPath: string, outDir: string): string[] {
  const bin = readFileSync(binaryPath);
  const secs = sections(bin).filter((s) => s.addr !== 0n);
  const toOffset = (addr: bigint): number | undefined => {
    const s = secs.find((x) => x.addr <= addr && addr < x.addr + x.size);
    return s === undefined ? undefined : Number(addr - s.addr + s.offset);
  };
  const toAddr = (offset: number): bigint | undefined => {
    const s = secs.find((x) => x.offset <= offset && offset < x.offset + x.size);
    return s === undefined ? undefined : BigInt(offset) - s.offset + s.addr;
  };
  const str = (ptr: bigint, len: bigint): Buffer | undefined => {
    const at = toOffset(ptr);
    return at === undefined || at + Number(len) > bin.length
      ? undefined
      : bin.subarray(at, at + Number(len));
  };
  const entry = (at: number) => {
    if (at < 0 || at + ENTRY_BYTES > bin.length) return undefined;
    const nameLen = bin.readBigUInt64LE(at + 8);
    if (nameLen === 0n || nameLen > 512n) return undefined;
    const name = str(bin.readBigUInt64LE(at), nameLen)?.toString("latin1");
    if (name === undefined || !/^[\x21-\x7e]+$/.test(name)) return undefined;
    return { name, data: str(bin.readBigUInt64LE(at + 16), bin.readBigUInt64LE(at + 24)) };
  };

  const needle = Buffer.from(KNOWN_FILE);
  let table: number | undefined;
  for (
    let hit = bin.indexOf(needle);
    hit >= 0 && table === undefined;
    hit = bin.indexOf(needle, hit + 1)
  ) {
    const addr = toAddr(hit);
    if (addr === undefined) continue;
    const pointer = Buffer.alloc(16);
    pointer.writeBigUInt64LE(addr, 0);
    pointer.writeBigUInt64LE(BigInt(needle.length), 8);
    const at = bin.indexOf(pointer);
    if (at >= 0 && entry(at)?.name === KNOWN_FILE) table = at;
  }
  if (table === undefined)
    throw new Error(`no embedded ${KNOWN_FILE} in ${binaryPath}: not an SST binary?`);
  let first = table;
  while (entry(first - ENTRY_BYTES) !== undefined) first -= ENTRY_BYTES;
  const written: string[] = [];
  for (let at = first, e = entry(at); e !== undefined; at += ENTRY_BYTES, e = entry(at)) {
    if (e.name.endsWith("/")) continue;
    const target = normalize(join(outDir, e.name));
    if (!target.startsWith(`${normalize(outDir)}/`))
      throw new Error(`unsafe embedded name ${e.name}`);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, e.data ?? Buffer.alloc(0));
    written.push(e.name);
  }
  return written;
}

// What `sst install` writes as .sst/platform/config.d.ts for an app whose only provider is
// aws (pkg/project/install.go, writeTypes).
export const AWS_CONFIG_TYPES = `import "./src/global.d.ts"
import "../types.generated"
import { AppInput, App, Config } from "./src/config"
import * as _aws from "@pulumi/aws";

declare global {
  // @ts-expect-error
  export import aws = _aws
  interface Providers {
    providers?: {
      "aws"?:  (_aws.ProviderArgs & { version?: string }) | boolean | string;
    }
  }
  export const $config: (
    input: Omit<Config, "app"> & {
      app(input: AppInput): Omit<App, "providers"> & Providers;
    },
  ) => Config;
}
`;

if (import.meta.main) {
  const [binary, out] = process.argv.slice(2);
  if (binary === undefined || out === undefined) {
    console.error("usage: node infra/sst/extract-sst-platform.ts <sst binary> <out dir>");
    process.exit(2);
  }
  const files = extractSstPlatform(binary, out);
  writeFileSync(join(out, "config.d.ts"), AWS_CONFIG_TYPES);
  writeFileSync(join(out, "..", "types.generated.ts"), "export {};\n");
  console.log(`extract-sst-platform: ${files.length} files into ${out}`);
}
