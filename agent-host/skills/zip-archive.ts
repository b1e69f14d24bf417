import * as yauzl from "yauzl";
import { WorkcellError } from "../../shared/errors/index.ts";
import {
  type ArchiveEntryKind,
  type ArchivePlan,
  type PlannedEntry,
  printable,
} from "./archive-plan.ts";
import { ArchiveRejection } from "./archive-rejection.ts";
import type { SkillLimits } from "./skill-limits.ts";
import type { TreeWriter } from "./tree-writer.ts";

/** `versionMadeBy` high byte of archives written on Unix: only they carry a Unix mode. */
const MADE_BY_UNIX = 3;
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
const S_IFIFO = 0o010000;
const S_IFCHR = 0o020000;
const S_IFBLK = 0o060000;
/** MS-DOS attribute bit of a directory. */
const DOS_DIRECTORY = 0x10;
/** The two compression methods every zip tool writes: stored and deflate. */
const STORED = 0;
const DEFLATED = 8;

export type ZipLimits = Pick<SkillLimits, "maxCompressionRatio" | "ratioFloorBytes">;

/**
 * Extracts a zip (yauzl) in two passes. First the whole central directory is read and
 * every entry validated (names, types from the Unix mode, duplicates, counts, declared
 * sizes, per-entry compression ratio, encryption) before a single byte is written: most
 * attacks are refused having written nothing at all. Then the files are inflated, and
 * yauzl (validateEntrySizes) and the writer cut off any entry whose real size exceeds
 * what it declared, so a lying header cannot expand past the limits either.
 *
 * yauzl also validates names itself (absolute paths, `..`, and with strictFileNames,
 * backslashes) and refuses to misread zip64 or overlapping entries; its errors become
 * rejections.
 */
export async function extractZip(
  archive: Buffer,
  plan: ArchivePlan,
  writer: TreeWriter,
  limits: ZipLimits,
  signal: AbortSignal,
): Promise<readonly string[]> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.fromBufferPromise(archive, {
      lazyEntries: true,
      autoClose: false,
      decodeStrings: true,
      validateEntrySizes: true,
      strictFileNames: true,
    });
  } catch (err) {
    throw rejectionOf(err);
  }
  try {
    const planned: { entry: yauzl.Entry; plannedEntry: PlannedEntry }[] = [];
    try {
      for await (const entry of zip.eachEntry()) {
        signal.throwIfAborted();
        const plannedEntry = plan.add(metaOf(entry, limits));
        if (plannedEntry !== null) planned.push({ entry, plannedEntry });
      }
    } catch (err) {
      throw rejectionOf(err);
    }
    const root = plan.skillRoot();
    for (const { entry, plannedEntry } of planned) {
      signal.throwIfAborted();
      if (plannedEntry.kind === "dir") {
        writer.directory(plannedEntry.components);
        continue;
      }
      let stream: NodeJS.ReadableStream;
      try {
        stream = await zip.openReadStreamPromise(entry);
      } catch (err) {
        throw rejectionOf(err, entry.fileName);
      }
      try {
        await writer.file(
          plannedEntry.components,
          plannedEntry.exec,
          stream as AsyncIterable<Buffer>,
          plannedEntry.size,
          signal,
        );
      } catch (err) {
        (stream as unknown as { destroy?: () => void }).destroy?.();
        throw rejectionOf(err, entry.fileName);
      }
    }
    return root;
  } finally {
    zip.close();
  }
}

function metaOf(entry: yauzl.Entry, limits: ZipLimits) {
  const name = entry.fileName;
  if (entry.isEncrypted()) {
    throw new ArchiveRejection(
      "encrypted",
      `The archive entry '${printable(name)}' is encrypted.`,
      name,
    );
  }
  if (entry.compressionMethod !== STORED && entry.compressionMethod !== DEFLATED) {
    throw new ArchiveRejection(
      "malformed",
      `The archive entry '${printable(name)}' uses compression method ${entry.compressionMethod}: only stored and deflate are supported.`,
      name,
    );
  }
  const size = entry.uncompressedSize;
  if (
    size > limits.ratioFloorBytes &&
    size / Math.max(1, entry.compressedSize) > limits.maxCompressionRatio
  ) {
    throw new ArchiveRejection(
      "compression_ratio",
      `The archive entry '${printable(name)}' expands more than ${limits.maxCompressionRatio} times: refused as a zip bomb.`,
      name,
    );
  }
  const unixMode =
    entry.versionMadeBy >> 8 === MADE_BY_UNIX ? entry.externalFileAttributes >>> 16 : 0;
  return { name, kind: kindOf(entry, unixMode), size, mode: unixMode & 0o7777 };
}

/**
 * The entry's type: from the Unix file type bits when the archive was made on Unix (that
 * is where zip stores symlinks and, in principle, FIFOs and devices), else from the
 * trailing `/` and the DOS directory bit.
 */
function kindOf(entry: yauzl.Entry, unixMode: number): ArchiveEntryKind {
  const dirByName = entry.fileName.endsWith("/");
  switch (unixMode & S_IFMT) {
    case 0:
      return dirByName || (entry.externalFileAttributes & DOS_DIRECTORY) !== 0 ? "dir" : "file";
    case S_IFREG:
      return "file";
    case S_IFDIR:
      return "dir";
    case S_IFLNK:
      return "symlink";
    case S_IFIFO:
      return "fifo";
    case S_IFCHR:
    case S_IFBLK:
      return "device";
    default:
      return "other";
  }
}

function rejectionOf(err: unknown, entry?: string): unknown {
  // Ours (rejections, filesystem errors) and aborts pass through unchanged.
  if (err instanceof ArchiveRejection || err instanceof WorkcellError) return err;
  if (err instanceof Error && err.name === "AbortError") return err;
  const message = err instanceof Error ? err.message : String(err);
  // yauzl's own name checks: "absolute path: …", "invalid relative path: …",
  // "invalid characters in fileName: …".
  if (/absolute path|invalid relative path|invalid characters/i.test(message)) {
    return new ArchiveRejection(
      "unsafe_name",
      `The archive has an unsafe entry name (${message}).`,
      entry,
    );
  }
  if (/too many bytes|too few bytes/i.test(message)) {
    return new ArchiveRejection(
      "too_large",
      `An archive entry's size is not what it declares (${message}).`,
      entry,
    );
  }
  return new ArchiveRejection(
    "malformed",
    `The archive is not a valid zip file (${message}).`,
    entry,
  );
}
