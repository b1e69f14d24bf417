import type { FileView } from "../../../shared/paths/file-view.ts";
import { SANDBOX_HOME, SANDBOX_PATH } from "../../../shared/paths/runtime-paths.ts";
import { EXEC_SHIM_MOUNT, type MountKey, sandboxMounts } from "../instance/mount-table.ts";
import { runtimeRootArgs } from "./runtime-root-args.ts";

// The bubblewrap command line of one process-tier exec. Pure, so the isolation boundary
// reads in one place: each line below is part of it (docs/architecture.md §3).
//
// bubblewrap 0.8 resolves every bind source as a path, even `--bind-fd` (it realpath()s
// /proc/self/fd/N and mounts the string it got): a symlink swapped into a parent
// directory between that and the mount redirects the bind (the advisory fixed in 0.12).
// So no source here passes through a directory anyone else can write: the UserWorkspace
// and skill projection are bind-mounted on the host at create, by root, from the
// descriptors agent-host opened no-follow (generation-dirs.ts), below the root-only
// state directory; bwrap binds those. And where each mount landed is verified from the
// host before the command may start (process-exec.ts, `--block-fd`).

/** Descriptor numbers in the bwrap process (the spawn's stdio array puts them there). */
export const CHILD_FD = {
  seccomp: 3,
  status: 4,
  block: 5,
  /** The generation's user namespace (sandbox-userns.ts), joined with --userns. */
  userns: 6,
  /** The trampoline's go-ahead: agent-host writes `go` once it is in the exec's cgroups. */
  go: 7,
  /** bwrap's whole command line, NUL-separated, written with the go-ahead (exec-trampoline.ts). */
  args: 8,
  /**
   * The exec's spec (cwd, environment, argv: exec-spec.ts), read by the exec shim inside
   * the sandbox once `--block-fd` is released (decision 0088). The trampoline and bwrap
   * pass it on untouched; the shim closes it before it execs the command.
   */
  spec: 9,
} as const;

/** Host paths bound into the sandbox (each below a directory only root can write). */
export type SandboxSources = {
  workspace: string;
  skills: string;
  runtime: string;
  tmp: string;
  home: string;
  /** The Workdir's host bind: present only in the `workdir` file view. */
  workdir?: string;
};

/** The sandbox user (docs/architecture.md §3); host 1000 too, through the namespace's map. */
export const SANDBOX_UID = 1000;
export const SANDBOX_GID = 1000;

export type BwrapCommand = {
  sources: SandboxSources;
  /** Host path of the exec shim (root's, read-only; preflight checked it). */
  execShim: string;
  /**
   * Sandbox path of the Workdir in the `workdir` file view (docs/architecture.md §5): the
   * UserWorkspace is bound read-only and `sources.workdir` read-write on top, here.
   */
  workdirTarget?: string;
};

/** The fixed environment of every exec, before the exec's own (which may override it). */
export const BASE_ENV: ReadonlyArray<readonly [string, string]> = [
  ["PATH", SANDBOX_PATH],
  ["HOME", SANDBOX_HOME],
  ["USER", "gem"],
  ["LOGNAME", "gem"],
  ["LANG", "C.UTF-8"],
  ["TMPDIR", "/tmp"],
];

/**
 * The exec's whole environment as `NAME=value` strings: BASE_ENV, then the exec's own
 * variables (which may override it). The exec shim execs the command with exactly these,
 * plus the `PWD` bwrap itself used to set after its chdir (decision 0088).
 */
export function execEnvironment(env: ReadonlyArray<readonly [string, string]>): string[] {
  const merged = new Map<string, string>(BASE_ENV);
  for (const [name, value] of env) merged.set(name, value);
  return [...merged].map(([name, value]) => `${name}=${value}`);
}

/**
 * bwrap's command line for a generation's sandbox, built before its exec is known
 * (decision 0088): everything but the exec's cwd, environment and argv, which the exec
 * shim gets on its spec fd once agent-host releases `--block-fd`.
 */
export function bwrapArgs(command: BwrapCommand): string[] {
  const { workdirTarget } = command;
  const workdir = command.sources.workdir;
  if ((workdirTarget === undefined) !== (workdir === undefined)) {
    throw new Error("the workdir file view needs both the Workdir's source and its target");
  }
  return [
    // Every namespace bubblewrap knows: user (the generation's own, made and pinned by
    // sandbox-userns.ts: uid 1000 maps to itself, nothing else exists, and an unused host
    // uid owns it, so its kernel budget is its own), pid, ipc, uts, cgroup, and net with
    // only `lo`.
    "--userns",
    String(CHILD_FD.userns),
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup",
    "--unshare-net",
    "--uid",
    String(SANDBOX_UID),
    "--gid",
    String(SANDBOX_GID),
    "--hostname",
    "sandbox",
    // A nested user namespace would hand the process capabilities again: the
    // generation's namespace allows none (max_user_namespaces = 0, set when it was made;
    // bwrap 0.8 refuses --disable-userns with --userns), and the seccomp filter refuses
    // unshare/clone namespace flags as well.
    // The command is PID 1 of its namespace: when it exits, the kernel kills whatever
    // it left behind, so no background process outlives its exec.
    "--as-pid-1",
    "--die-with-parent",
    // No controlling terminal shared with agent-host (TIOCSTI-style injection).
    "--new-session",
    // An environment built from nothing: no agent-host variable reaches the sandbox (the
    // shim then execs the command with exactly the exec's, execEnvironment).
    "--clearenv",
    "--seccomp",
    String(CHILD_FD.seccomp),
    "--json-status-fd",
    String(CHILD_FD.status),
    "--block-fd",
    String(CHILD_FD.block),
    // The root is a fresh tmpfs holding only what follows: the read-only Runtime Assets
    // at /runtime with the usual FHS names pointing into them, /proc and a private /dev.
    ...runtimeRootArgs(command.sources.runtime, { linkSbin: true }),
    // /dev is a private tmpfs; read-only it offers no writable /dev/shm (device nodes
    // such as /dev/null still work: writing a device needs no writable filesystem).
    "--remount-ro",
    "/dev",
    // The mount table's process binds (mount-table.ts), in its order: home before the
    // two mounts inside it, the Workdir (in the `workdir` view) on top of the read-only
    // UserWorkspace. Where each landed is verified before the command may start.
    ...processBindArgs(command),
    // Read-only after the binds were placed inside it: the root's own names (/usr, /etc,
    // mount points) cannot be replaced by the sandbox.
    "--remount-ro",
    "/",
    // The exec's own cwd is the shim's chdir (with bwrap's words when it fails).
    "--chdir",
    "/",
    "--",
    EXEC_SHIM_MOUNT,
  ];
}

/** The file view a command is for: the `workdir` view is the one with a Workdir target. */
export function bwrapFileView(command: Pick<BwrapCommand, "workdirTarget">): FileView {
  return command.workdirTarget === undefined ? "workspace" : "workdir";
}

/**
 * `--bind`/`--ro-bind` source target, for each of the mount table's process binds of the
 * command's view (the runtime row is runtimeRootArgs'), from the command's sources.
 */
function processBindArgs(command: BwrapCommand): string[] {
  const { sources } = command;
  const from: Partial<Record<MountKey, string>> = {
    home: sources.home,
    workspace: sources.workspace,
    workdir: sources.workdir,
    skills: sources.skills,
    tmp: sources.tmp,
    execShim: command.execShim,
  };
  const mounts = sandboxMounts("process", bwrapFileView(command), command.workdirTarget ?? "");
  return mounts.flatMap((mount) => {
    if (mount.how !== "bind") return [];
    const source = from[mount.key];
    if (source === undefined) throw new Error(`the process tier has no source for ${mount.key}`);
    return [mount.readOnly ? "--ro-bind" : "--bind", source, mount.target];
  });
}

/**
 * The host-side trampoline (bash, for `mapfile -d ''`), started by agent-host directly as
 * the host uid owning the generation's user namespace (Node's spawn uid/gid: setgroups(0),
 * setgid, setuid, so no supplementary group and no host capability; bwrap joining the
 * namespace with --userns needs that uid). It sets the umask new files get (0700 dirs,
 * 0600 files), waits until agent-host (root) has put it in the exec's cgroups and says
 * `go` on its fd, so bwrap and everything it starts are counted and killable from the
 * start, closes that fd, reads bwrap's whole command line (NUL-separated, ending at EOF)
 * from the args fd and closes it, then becomes bwrap. No go-ahead (agent-host closed the
 * pipe) or no arguments: it exits, bwrap never runs. The command line names no exec, so
 * the whole sandbox is built before its exec is known (decisions 0076, 0088); the spec fd
 * is left open for bwrap to pass on to the exec shim.
 * bwrap sets no_new_privs itself before it makes the sandbox, and drops the bounding set
 * inside (the escape suite checks both from within). Nothing is interpolated into the
 * script: bwrap's path is its one positional argument, the rest are array elements.
 */
export const TRAMPOLINE_SCRIPT = [
  "umask 077",
  `IFS= read -r go <&${CHILD_FD.go} || exit 125`,
  '[ "$go" = go ] || exit 125',
  `exec ${CHILD_FD.go}<&-`,
  `mapfile -t -d '' -u ${CHILD_FD.args} args || exit 125`,
  `exec ${CHILD_FD.args}<&-`,
  // biome-ignore lint/suspicious/noTemplateCurlyInString: bash array syntax, not a template
  '[ "${#args[@]}" -gt 0 ] || exit 125',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: bash array syntax, not a template
  'exec "$1" "${args[@]}"',
].join("\n");

/** What agent-host writes on the trampoline's go fd once it sits in the exec's cgroups. */
export const TRAMPOLINE_GO = "go\n";
