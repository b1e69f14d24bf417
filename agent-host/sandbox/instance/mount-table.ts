import { FILE_VIEW_VALUES, type FileView } from "../../../shared/paths/file-view.ts";
import {
  SANDBOX_HOME,
  SANDBOX_RUNTIME_MOUNT,
  SANDBOX_SKILLS_MOUNT,
  SANDBOX_USER_DATA_MOUNT,
} from "../../../shared/paths/runtime-paths.ts";
import { CONTAINER_EGRESS_MOUNT } from "../../egress/container-egress-dir.ts";
import type { SandboxTier } from "../sandbox-tier.ts";

// Every mount a sandbox has, one row each (docs/architecture.md §3 and §5 "File views"):
// both tiers' bind lists (container-spec.ts, bwrap-args.ts), the process tier's
// verifier (prebuilt-sandbox.ts) and the mount-dir opener (open-mount-dirs.ts) are built
// from it, so adding a mount is one row here plus its source in each tier that binds it.

/** What a mount is of: the name its host source goes by in each tier's inputs. */
export type MountKey =
  | "home"
  | "workspace"
  | "workdir"
  | "skills"
  | "runtime"
  | "tmp"
  | "egress"
  | "execShim";

/**
 * How a tier provides a row: `bind`, from the list this table builds; `tmpfs`, a
 * size-bounded tmpfs of the tier's own (Docker's Tmpfs); `root`, the bind that
 * runtime-root-args.ts makes with the sandbox root (shared with the asset prober).
 */
export type TierMount = "bind" | "tmpfs" | "root";

/** A directory the mount-dir opener opens no-follow for the bind (open-mount-dirs.ts). */
export type HostDir = {
  /** From the data root, or from the UserWorkspace the opener opened just before. */
  beneath: "dataRoot" | "workspace";
  parts(dirname: string, workdirPath: string): readonly string[];
  /** Created empty when absent (a user with no skill grant yet: mount an empty one). */
  create?: boolean;
};

export type MountRow = {
  key: MountKey;
  /** Its path inside the sandbox; `workdir` is the run's own Workdir there. */
  target: string | "workdir";
  /** Read-only or read-write, by file view. */
  mode(view: FileView): "ro" | "rw";
  /** The file views that have it. */
  views: readonly FileView[];
  /** Each tier that has it, and how; a tier not named has no such mount. */
  tiers: Partial<Record<SandboxTier, TierMount>>;
  /** Opened from the host by openMountDirs (both tiers), before either tier binds it. */
  hostDir?: HostDir;
};

/**
 * Where the exec shim (native/exec-shim.c) is bound, read-only, in every process-tier
 * sandbox: the command bwrap runs, which becomes the exec's command (decision 0088).
 */
export const EXEC_SHIM_MOUNT = "/.workcell/exec-shim";

const ALL_VIEWS = FILE_VIEW_VALUES;
const ro = () => "ro" as const;
const rw = () => "rw" as const;

/**
 * In bind order: bwrap mounts in command-line order, so a mount inside another comes
 * after it (home before the two below it; the Workdir on top of the read-only
 * UserWorkspace). Docker orders by target depth itself.
 */
export const MOUNT_TABLE: readonly MountRow[] = [
  // The container tier's home is a tmpfs of its own (container-spec.ts Tmpfs); the process
  // tier's is a tmpfs on the host that outlives each exec (generation-dirs.ts), bound in.
  {
    key: "home",
    target: SANDBOX_HOME,
    mode: rw,
    views: ALL_VIEWS,
    tiers: { container: "tmpfs", process: "bind" },
  },
  // The caller's whole UserWorkspace: the uid mount is the boundary between users; the
  // Workdir below it is only a cwd (§2). Read-only in the `workdir` file view (§5).
  {
    key: "workspace",
    target: SANDBOX_USER_DATA_MOUNT,
    mode: (view) => (view === "workdir" ? "ro" : "rw"),
    views: ALL_VIEWS,
    tiers: { container: "bind", process: "bind" },
    hostDir: { beneath: "dataRoot", parts: (dirname) => ["users", dirname, "workspace"] },
  },
  // The Workdir read-write on top of itself in the `workdir` view. Opened in every view:
  // it must exist (the run worker materializes it first, §4.7).
  {
    key: "workdir",
    target: "workdir",
    mode: rw,
    views: ["workdir"],
    tiers: { container: "bind", process: "bind" },
    hostDir: { beneath: "workspace", parts: (_, workdirPath) => workdirPath.split("/") },
  },
  {
    key: "skills",
    target: SANDBOX_SKILLS_MOUNT,
    mode: ro,
    views: ALL_VIEWS,
    tiers: { container: "bind", process: "bind" },
    hostDir: {
      beneath: "dataRoot",
      parts: (dirname) => ["skills", "projections", dirname],
      create: true,
    },
  },
  // The Runtime Assets (operator-owned). The container tier binds it only when the node
  // has them (docker-driver.ts runtimeDir).
  {
    key: "runtime",
    target: SANDBOX_RUNTIME_MOUNT,
    mode: ro,
    views: ALL_VIEWS,
    tiers: { container: "bind", process: "root" },
  },
  // Private, size-bounded scratch: as home.
  {
    key: "tmp",
    target: "/tmp",
    mode: rw,
    views: ALL_VIEWS,
    tiers: { container: "tmpfs", process: "bind" },
  },
  // The egress proxy's sockets of this container's runs with network (agent-host's
  // directory, decision 0117); empty while no such run executes.
  {
    key: "egress",
    target: CONTAINER_EGRESS_MOUNT,
    mode: ro,
    views: ALL_VIEWS,
    tiers: { container: "bind" },
  },
  // The exec shim, a static binary of root's: the command bwrap runs (decision 0088).
  {
    key: "execShim",
    target: EXEC_SHIM_MOUNT,
    mode: ro,
    views: ALL_VIEWS,
    tiers: { process: "bind" },
  },
];

/** One mount of one sandbox: the table's row resolved for a tier, a view and a Workdir. */
export type SandboxMount = { key: MountKey; target: string; readOnly: boolean; how: TierMount };

/**
 * The mounts a tier gives a sandbox of this view, in bind order. `workdirTarget` is the
 * Workdir's path inside the sandbox (runtimeWorkdirPath).
 */
export function sandboxMounts(
  tier: SandboxTier,
  view: FileView,
  workdirTarget: string,
): SandboxMount[] {
  return MOUNT_TABLE.flatMap((row) => {
    const how = row.tiers[tier];
    if (how === undefined || !row.views.includes(view)) return [];
    const target = row.target === "workdir" ? workdirTarget : row.target;
    return [{ key: row.key, target, readOnly: row.mode(view) === "ro", how }];
  });
}

/** The table's row of a key (every key has exactly one). */
export function mountRow(key: MountKey): MountRow {
  const row = MOUNT_TABLE.find((r) => r.key === key);
  if (row === undefined) throw new Error(`no mount ${key} in the mount table`);
  return row;
}
