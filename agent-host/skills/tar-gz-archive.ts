import { Transform, type TransformCallback } from "node:stream";
import { createGunzip } from "node:zlib";
import * as tar from "tar-stream";
import { WorkcellError } from "../../shared/errors/index.ts";
import type { ArchiveEntryKind, ArchiveEntryMeta, ArchivePlan } from "./archive-plan.ts";
import { ArchiveRejection } from "./archive-rejection.ts";
import type { SkillLimits } from "./skill-limits.ts";
import type { TreeWriter } from "./tree-writer.ts";

/** Bytes a tar stream spends per entry besides contents: a header, a pax header, padding. */
export const TAR_ENTRY_OVERHEAD_BYTES = 3 * 512;

export type TarGzLimits = Pick<
  SkillLimits,
  "maxCompressionRatio" | "ratioFloorBytes" | "maxSkillBytes" | "maxEntries"
>;

/**
 * Extracts a gzip-compressed tar in one streaming pass (tar-stream): each header is
 * validated by the archive plan before its entry is written, and the gzip output is
 * counted as it is inflated, so a gzip bomb is stopped at the first byte over the total
 * limit or over the compression ratio, whatever the headers claim. tar-stream resolves
 * pax and GNU long names before it hands out a header, so the name judged is the name
 * that would be used.
 *
 * Entries written before a later one is refused stay in the caller's private temp
 * directory, which the caller removes: nothing of a refused archive becomes visible.
 */
export async function extractTarGz(
  archive: Buffer,
  plan: ArchivePlan,
  writer: TreeWriter,
  limits: TarGzLimits,
  signal: AbortSignal,
): Promise<readonly string[]> {
  const maxExpanded = limits.maxSkillBytes + (limits.maxEntries + 2) * TAR_ENTRY_OVERHEAD_BYTES;
  let expanded = 0;
  const gunzip = createGunzip();
  const counter = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      expanded += chunk.byteLength;
      if (expanded > maxExpanded) {
        callback(
          new ArchiveRejection(
            "too_large",
            `The archive expands to more than ${maxExpanded} bytes.`,
          ),
        );
      } else if (
        expanded > limits.ratioFloorBytes &&
        expanded / Math.max(1, archive.byteLength) > limits.maxCompressionRatio
      ) {
        callback(
          new ArchiveRejection(
            "compression_ratio",
            `The archive expands more than ${limits.maxCompressionRatio} times: refused as a gzip bomb.`,
          ),
        );
      } else {
        callback(null, chunk);
      }
    },
  });
  const extract = tar.extract();
  gunzip.on("error", (err) => extract.destroy(rejectionOf(err) as Error));
  counter.on("error", (err) => extract.destroy(err));
  gunzip.pipe(counter).pipe(extract);
  gunzip.end(archive);
  try {
    for await (const entry of extract) {
      signal.throwIfAborted();
      const planned = plan.add(metaOf(entry.header));
      if (planned === null || planned.kind === "dir") {
        if (planned !== null) writer.directory(planned.components);
        for await (const _ of entry as unknown as AsyncIterable<Buffer>) {
          // A directory entry carries no data; drain whatever it claims to have.
        }
        continue;
      }
      // streamx readables iterate their chunks, typed or not.
      const chunks = entry as unknown as AsyncIterable<Buffer>;
      await writer.file(planned.components, planned.exec, chunks, planned.size, signal);
    }
  } catch (err) {
    throw rejectionOf(err);
  } finally {
    gunzip.destroy();
    counter.destroy();
    extract.destroy();
  }
  return plan.skillRoot();
}

function metaOf(header: tar.Header): ArchiveEntryMeta {
  return {
    name: header.name,
    kind: kindOf(header.type),
    size: header.size ?? 0,
    mode: (header.mode ?? 0) & 0o7777,
  };
}

function kindOf(type: tar.Header["type"] | null | undefined): ArchiveEntryKind {
  switch (type) {
    case "file":
      return "file";
    case "directory":
      return "dir";
    case "symlink":
      return "symlink";
    case "link":
      return "hardlink";
    case "character-device":
    case "block-device":
      return "device";
    case "fifo":
      return "fifo";
    default:
      // contiguous files, unknown type flags, sparse files: not what a skill is made of.
      return "other";
  }
}

function rejectionOf(err: unknown): unknown {
  if (err instanceof ArchiveRejection || err instanceof WorkcellError) return err;
  if (err instanceof Error && err.name === "AbortError") return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ArchiveRejection("malformed", `The archive is not a valid tar.gz file (${message}).`);
}
