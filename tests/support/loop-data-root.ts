import { execFileSync } from "node:child_process";
import { mkdirSync, truncateSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DataRoot } from "./data-root.ts";

/**
 * A fresh data root on its own filesystem, made by `mkfs` (command and arguments; the image
 * path is appended) in a sparse image of `imageBytes` and loop-mounted (needs root and the
 * mkfs: scripts/ensure-system.sh). Only what is written takes disk; removing it unmounts.
 */
export async function loopDataRoot(
  mkfs: readonly [string, ...string[]],
  imageBytes: number,
): Promise<DataRoot> {
  const dir = await mkdtemp(join(tmpdir(), `workcell-${mkfs[0].replace("mkfs.", "")}-`));
  const image = join(dir, "fs.img");
  const mount = join(dir, "mnt");
  writeFileSync(image, "");
  truncateSync(image, imageBytes);
  execFileSync(mkfs[0], [...mkfs.slice(1), image], { timeout: 60_000 });
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
