import { DirFiles } from "../workspace/dir-files.ts";
import type { MetadataScan } from "../workspace/index.ts";
import type { WorkspaceUsage } from "./workspace-usage.ts";

/** Bytes of a scan's regular files: kept by directory for incremental scans (dir-files.ts). */
export function scanBytes(scan: MetadataScan): number {
  if (scan.files instanceof DirFiles) return scan.files.bytes;
  let sum = 0;
  for (const stamp of scan.files.values()) sum += stamp.size;
  return sum;
}

/**
 * What a running command has added to its Workdir so far (decision 0163): a fresh look
 * (`look`, an incremental peek that re-lists only the directories the fanotify feed named)
 * compared with the command's before-scan, whose sums are taken once here. Never below 0,
 * as scanGrowth. Undefined when a look is unknown (failed, truncated): the caller measures
 * another way.
 */
export function commandGrowth(
  before: MetadataScan,
  look: (signal: AbortSignal) => Promise<MetadataScan | undefined>,
): (signal: AbortSignal) => Promise<WorkspaceUsage | undefined> {
  const baseBytes = scanBytes(before);
  const baseEntries = before.files.size + before.dirs.size;
  return async (signal) => {
    const now = await look(signal);
    if (now === undefined || now.truncated) return undefined;
    return {
      bytes: Math.max(0, scanBytes(now) - baseBytes),
      inodes: Math.max(0, now.files.size + now.dirs.size - baseEntries),
    };
  };
}
