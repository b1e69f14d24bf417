import type { DataRoot } from "./data-root.ts";
import { loopDataRoot } from "./loop-data-root.ts";

/** Bytes of the sparse image; only what is written takes disk. */
const IMAGE_BYTES = 512 * 1024 * 1024;

/**
 * A fresh data root on its own btrfs filesystem (needs root and btrfs-progs): the snapshot
 * mode of the checkpoint suite, where managed Workdirs are subvolumes (docs/decisions/0190).
 */
export function btrfsLoopDataRoot(imageBytes = IMAGE_BYTES): Promise<DataRoot> {
  return loopDataRoot(["mkfs.btrfs", "-q"], imageBytes);
}
