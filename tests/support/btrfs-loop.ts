import { execFileSync } from "node:child_process";
import { mkdirSync, truncateSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DataRoot } from "./data-root.ts";

/** Bytes of the sparse image; only what is written takes disk. */
const IMAGE_BYTES = 512 * 1024 * 1024;

/**
 * A fresh data root on its own btrfs filesystem, loop-mounted from a sparse image (needs
 * root and btrfs-progs: scripts/ensure-system.sh): the snapshot mode of the checkpoint
 * suite, where managed Workdirs are subvolumes (docs/decisions/0190).
 */
export async function btrfsLoopDataRoot(imageBytes = IMAGE_BYTES): Promise<DataRoot> {
  const dir = await mkdtemp(join(tmpdir(), "workcell-btrfs-"));
  const image = join(dir, "fs.img");
  const mount = join(dir, "mnt");
  writeFileSync(image, "");
  truncateSync(image, imageBytes);
  execFileSync("mkfs.btrfs", ["-q", image], { timeout: 60_000 });
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
