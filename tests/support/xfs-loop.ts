import { execFileSync } from "node:child_process";
import { mkdirSync, truncateSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DataRoot } from "./data-root.ts";

/** Bytes of the sparse image: XFS needs 300 MB at least; only what is written takes disk. */
const IMAGE_BYTES = 512 * 1024 * 1024;

/**
 * A fresh data root on its own XFS filesystem with reflink=1, loop-mounted from a sparse
 * image (needs root and xfsprogs: scripts/ensure-system.sh). The default data root (tmpfs
 * or ext4) is the copy mode; this one is the reflink mode of the same suite.
 */
export async function xfsLoopDataRoot(imageBytes = IMAGE_BYTES): Promise<DataRoot> {
  const dir = await mkdtemp(join(tmpdir(), "workcell-xfs-"));
  const image = join(dir, "fs.img");
  const mount = join(dir, "mnt");
  writeFileSync(image, "");
  truncateSync(image, imageBytes);
  execFileSync("mkfs.xfs", ["-q", "-m", "reflink=1", image], { timeout: 60_000 });
  mkdirSync(mount);
  execFileSync("mount", ["-o", "loop", image, mount], { timeout: 60_000 });
  return {
    path: mount,
    async remove() {
      execFileSync("umount", [mount], { timeout: 60_000 });
      await rm(dir, { recursive: true, force: true });
    },
  };
}
