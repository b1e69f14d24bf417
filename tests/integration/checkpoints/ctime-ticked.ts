import { lstatSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pollUntil } from "../../support/poll-until.ts";

/**
 * Waits until the kernel's (coarse, per-tick) ctime clock has moved past `planted`'s ctime,
 * so a copy made next is provably newer than the tree; on a fast tmpfs the two could share
 * one tick, and the copy would then (rightly) not count as newer. Probes with a scratch
 * file beside the Workdir, removed after.
 */
export async function ctimeTicked(workdir: string, planted: string): Promise<void> {
  const probe = join(workdir, "..", ".ctime-probe");
  const plantedNs = lstatSync(planted, { bigint: true }).ctimeNs;
  await pollUntil(
    () => {
      writeFileSync(probe, "");
      return lstatSync(probe, { bigint: true }).ctimeNs > plantedNs;
    },
    { what: "the ctime clock to tick" },
  );
  rmSync(probe);
}
