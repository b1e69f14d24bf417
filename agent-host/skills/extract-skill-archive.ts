import type { FsSyscalls } from "../workspace/syscalls.ts";
import { createArchivePlan } from "./archive-plan.ts";
import { ArchiveRejection } from "./archive-rejection.ts";
import type { SkillLimits } from "./skill-limits.ts";
import { extractTarGz } from "./tar-gz-archive.ts";
import { createTreeWriter } from "./tree-writer.ts";
import { extractZip } from "./zip-archive.ts";

export const ARCHIVE_FORMATS = ["zip", "tar.gz"] as const;
export type ArchiveFormat = (typeof ARCHIVE_FORMATS)[number];

/** The format by its magic bytes; the name or content type an uploader sent is not trusted. */
export function detectArchiveFormat(archive: Buffer): ArchiveFormat | undefined {
  // "PK\3\4": a local file header; "PK\5\6": the end record of an empty zip.
  if (archive[0] === 0x50 && archive[1] === 0x4b && (archive[2] === 3 || archive[2] === 5))
    return "zip";
  if (archive[0] === 0x1f && archive[1] === 0x8b) return "tar.gz";
  return undefined;
}

export interface ExtractedArchive {
  readonly format: ArchiveFormat;
  /** Path of the skill root inside the destination: `[]`, or `[dir]` for one top directory. */
  readonly root: readonly string[];
}

/**
 * Extracts a skill archive into `destFd`, an empty private directory the caller created
 * and removes on failure. Throws ArchiveRejection for an archive that breaks a rule
 * (archive-plan.ts, zip-archive.ts, tar-gz-archive.ts hold the rules and their reasons).
 */
export async function extractSkillArchive(
  sys: FsSyscalls,
  archive: Buffer,
  destFd: number,
  limits: SkillLimits,
  options: { readonly durable: boolean; readonly signal: AbortSignal },
): Promise<ExtractedArchive> {
  if (archive.byteLength > limits.maxArchiveBytes) {
    throw new ArchiveRejection(
      "too_large",
      `The archive is larger than ${limits.maxArchiveBytes} bytes.`,
    );
  }
  const format = detectArchiveFormat(archive);
  if (format === undefined) {
    throw new ArchiveRejection(
      "unsupported_format",
      "The archive is neither a zip nor a tar.gz file.",
    );
  }
  const plan = createArchivePlan(limits);
  const writer = createTreeWriter(sys, destFd, {
    maxTotalBytes: limits.maxSkillBytes,
    durable: options.durable,
  });
  try {
    const root =
      format === "zip"
        ? await extractZip(archive, plan, writer, limits, options.signal)
        : await extractTarGz(archive, plan, writer, limits, options.signal);
    writer.finish();
    return { format, root };
  } finally {
    writer.close();
  }
}
