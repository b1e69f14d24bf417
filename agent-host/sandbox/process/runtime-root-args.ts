import { SANDBOX_RUNTIME_MOUNT } from "../../../shared/paths/runtime-paths.ts";

export type RuntimeRootOptions = {
  /**
   * Whether /sbin links to usr/sbin as well. A process-tier exec gets it; the asset
   * prober never had it (its PATH names no sbin directory), and keeps the command line
   * it has always probed with.
   */
  linkSbin: boolean;
};

/**
 * The bubblewrap arguments that make a sandbox root out of the Runtime Assets: the tree
 * bound read-only at /runtime, the usual FHS names pointing into it (a merged-/usr tree),
 * a fresh /proc and a private /dev. Shared by the process tier's exec (bwrap-args.ts) and
 * the asset prober, so the probes run against the root an exec gets.
 */
export function runtimeRootArgs(runtimeSource: string, options: RuntimeRootOptions): string[] {
  return [
    "--ro-bind",
    runtimeSource,
    SANDBOX_RUNTIME_MOUNT,
    "--symlink",
    `${SANDBOX_RUNTIME_MOUNT}/usr`,
    "/usr",
    "--symlink",
    "usr/bin",
    "/bin",
    ...(options.linkSbin ? ["--symlink", "usr/sbin", "/sbin"] : []),
    "--symlink",
    "usr/lib",
    "/lib",
    "--symlink",
    "usr/lib64",
    "/lib64",
    "--symlink",
    `${SANDBOX_RUNTIME_MOUNT}/etc`,
    "/etc",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
  ];
}
