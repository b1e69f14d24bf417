import { bwrapAssetProber } from "../../../agent-host/runtime/bwrap-asset-prober.ts";
import { verifyRuntimeAssets } from "../../../agent-host/runtime/runtime-assets.ts";
import { type DoctorResult, fail, ok, within } from "./doctor-check.ts";

/**
 * A first verification hashes every file of the tree (~300 MB); later ones only files
 * whose inode, size or mtime changed since a clean verification.
 */
export const RUNTIME_ASSETS_CHECK_TIMEOUT_MS = 5 * 60_000;

/** The Runtime Assets as the node verifies them at start: checksums and every asset's probe. */
export function runtimeAssetsCheck(treeDir: string): Promise<DoctorResult> {
  const name = "runtime assets";
  return within(name, RUNTIME_ASSETS_CHECK_TIMEOUT_MS, async (signal) => {
    const report = await verifyRuntimeAssets({
      treeDir,
      prober: bwrapAssetProber("bwrap"),
      signal,
    });
    const broken = report.assets.filter((a) => !a.ready);
    if (report.error !== undefined) return fail(name, `${treeDir}: ${report.error}`);
    if (broken.length === 0) {
      return ok(name, `${report.version}: ${report.assets.length} assets ready (${treeDir})`);
    }
    const first = broken[0];
    return fail(
      name,
      `${broken.length} of ${report.assets.length} not ready (${broken.map((a) => a.name).join(", ")}): ${first?.reason ?? "?"}`,
    );
  });
}
