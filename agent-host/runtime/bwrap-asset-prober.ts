import { runSandboxProbe } from "../sandbox/process/run-sandbox-probe.ts";
import { runtimeRootArgs } from "../sandbox/process/runtime-root-args.ts";
import type { AssetProber, RuntimeAssetSpec } from "./runtime-assets.ts";

/** Bound on one asset's probe (it prints a version or a sum). */
export const PROBE_TIMEOUT_MS = 20_000;

/**
 * Probes each asset in a minimal bubblewrap sandbox of the tree laid out as at /runtime:
 * the process tier's way, for a node where bubblewrap can create namespaces.
 */
export function bwrapAssetProber(bwrap: string): AssetProber {
  return async (treeDir, assets, signal) => {
    const verdicts: Array<string | undefined> = [];
    for (const asset of assets) verdicts.push(await runProbe(bwrap, treeDir, asset, signal));
    return verdicts;
  };
}

/** Whether a probe's stdout is what the asset must print; undefined = passed. */
export function probeVerdict(asset: RuntimeAssetSpec, stdout: string): string | undefined {
  return asset.expect.test(stdout)
    ? undefined
    : `probe printed ${JSON.stringify(stdout.slice(0, 80))}`;
}

/**
 * The probe's bubblewrap command line: every namespace unshared, an empty environment but
 * PATH and HOME, and the process tier's root (without /sbin, as it has always been probed).
 */
function probeArgs(treeDir: string, probe: readonly string[]): string[] {
  return [
    "--unshare-all",
    "--die-with-parent",
    "--clearenv",
    "--setenv",
    "PATH",
    "/runtime/usr/bin:/usr/bin:/bin",
    "--setenv",
    "HOME",
    "/tmp",
    ...runtimeRootArgs(treeDir, { linkSbin: false }),
    "--tmpfs",
    "/tmp",
    "--",
    ...probe,
  ];
}

/** Runs the probe in a minimal sandbox of the tree laid out as at /runtime; undefined = passed. */
async function runProbe(
  bwrap: string,
  treeDir: string,
  asset: RuntimeAssetSpec,
  signal: AbortSignal,
): Promise<string | undefined> {
  const out = await runSandboxProbe(bwrap, probeArgs(treeDir, asset.probe), {
    timeoutMs: PROBE_TIMEOUT_MS,
    signal,
    env: {},
  });
  if (out.code === 0) return probeVerdict(asset, out.stdout);
  const why =
    out.error?.message ??
    (out.stopped
      ? `no answer within ${PROBE_TIMEOUT_MS} ms (or agent-host stopping), ended`
      : out.stderr.trim() || `exit ${out.code ?? out.signal}`);
  return `probe failed: ${why.trim().slice(0, 200)}`;
}
