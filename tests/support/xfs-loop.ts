import type { DataRoot } from "./data-root.ts";
import { loopDataRoot } from "./loop-data-root.ts";

/** Bytes of the sparse image: XFS needs 300 MB at least; only what is written takes disk. */
const IMAGE_BYTES = 512 * 1024 * 1024;

/**
 * A fresh data root on its own XFS filesystem with reflink=1 (needs root and xfsprogs). The
 * default data root (tmpfs or ext4) is the copy mode; this one is the reflink mode of the
 * same suite.
 */
export function xfsLoopDataRoot(imageBytes = IMAGE_BYTES): Promise<DataRoot> {
  return loopDataRoot(["mkfs.xfs", "-q", "-m", "reflink=1"], imageBytes);
}
