import { DirFiles } from "../workspace/dir-files.ts";
import type { MetadataScan } from "../workspace/index.ts";
import type { WorkspaceUsage } from "./workspace-usage.ts";

/**
 * What a command added to a Workdir between two change-batch scans: bytes of regular
 * files and entries (files and directories), never below 0, so a command that deleted
 * more than it wrote leaves the figure as it was until the next measurement (the safe
 * side: a deletion the measurement already saw is never taken off twice). Undefined when
 * a scan is missing or truncated: the growth is then unknown.
 */
export function scanGrowth(
  before: MetadataScan | undefined,
  after: MetadataScan | undefined,
): WorkspaceUsage | undefined {
  if (before === undefined || after === undefined || before.truncated || after.truncated) {
    return undefined;
  }
  const bytes = (scan: MetadataScan) => {
    // Incremental scans keep their sums by directory (dir-files.ts): no walk of every stamp.
    if (scan.files instanceof DirFiles) return scan.files.bytes;
    let sum = 0;
    for (const stamp of scan.files.values()) sum += stamp.size;
    return sum;
  };
  const entries = (scan: MetadataScan) => scan.files.size + scan.dirs.size;
  return {
    bytes: Math.max(0, bytes(after) - bytes(before)),
    inodes: Math.max(0, entries(after) - entries(before)),
  };
}
