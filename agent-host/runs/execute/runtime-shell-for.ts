import { SANDBOX_RUNTIME_MOUNT } from "../../../shared/paths/runtime-paths.ts";
import type { RuntimeAssetsReport } from "../../runtime/runtime-assets.ts";
import { tierOfInstanceId } from "../../sandbox/sandbox-tier.ts";
import { IMAGE_SHELL, type SandboxShell, type ShellFor } from "./sandbox-exec-adapter.ts";

/**
 * The bash tool's shell per tier. Both tiers run the Runtime Assets' bash at /runtime,
 * or refuse with the asset's reason; nothing falls back to another binary. In the
 * container tier that holds when the image is the Runtime Assets' own
 * (workcell-sandbox:<key>, the default): its root has the same libc and loader as
 * /runtime. Another image an operator configured (SANDBOX_IMAGE; the busybox test image)
 * may have neither, so the tool runs that image's own /bin/sh (docs/decisions/0042).
 */
export function runtimeShellFor(
  runtime: Promise<RuntimeAssetsReport>,
  containerImageIsAssets: Promise<boolean>,
): ShellFor {
  const runtimeShell = runtime.then((report): SandboxShell => {
    const bash = report.assets.find((a) => a.name === "bash");
    return bash?.ready
      ? { ok: true, argv: [`${SANDBOX_RUNTIME_MOUNT}/usr/bin/bash`, "-c"] }
      : {
          ok: false,
          reason: `the bash Runtime Asset is not ready (${bash?.reason ?? report.error ?? "unknown"})`,
        };
  });
  const containerShell = containerImageIsAssets.then((assets) =>
    assets ? runtimeShell : IMAGE_SHELL,
  );
  return (handle) =>
    tierOfInstanceId(handle.instanceId) === "process" ? runtimeShell : containerShell;
}
