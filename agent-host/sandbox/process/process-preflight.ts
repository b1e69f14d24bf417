import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, chmod, lstat, mkdir, readFile, realpath, stat } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { createHostMounts, type HostMounts } from "../instance/host-mounts.ts";
import { checkExecShim, DEFAULT_EXEC_SHIM } from "./exec-shim-check.ts";
import { createHostSpawner, type HostSpawner } from "./host-spawner.ts";
import { runSandboxProbe } from "./run-sandbox-probe.ts";
import { detectCgroups, type SandboxCgroups } from "./sandbox-cgroups.ts";
import { buildSeccompFilter, seccompSupported } from "./seccomp-filter.ts";
import { reachableStateDir } from "./state-dir-alias.ts";

const run = promisify(execFile);
const PROBE_TIMEOUT_MS = 10_000;
/** Mode bits (stat(2)); node:fs does not export them. */
const S_ISUID = 0o4000;
const S_ISGID = 0o2000;
/** --bind-fd, --disable-userns, --json-status-fd and --block-fd are all in 0.8. */
const MIN_BWRAP = [0, 8, 0] as const;

export type ProcessTierParts = {
  /** execShim: the static binary every exec's command starts from (decision 0088). */
  tools: { bash: string; bwrap: string; setpriv: string; unshare: string; execShim: string };
  bwrapVersion: string;
  cgroups: SandboxCgroups;
  seccompFilter: Buffer;
  /** mount(2) through glibc, for the generations' binds and tmpfs. */
  mounts: HostMounts;
  /** posix_spawn through glibc: trampolines start without a fork of agent-host (0083). */
  spawner: HostSpawner;
  /** Canonical: mount points are compared with /proc/self/mountinfo. */
  stateDir: string;
};

export type ProcessPreflight =
  | { ready: true; parts: ProcessTierParts; detail: string }
  | { ready: false; missing: string };

export type ProcessPreflightInput = {
  /** PATH searched for bwrap and sh (tests remove a tool by narrowing it). */
  path?: string;
  stateDir: string;
  /** Name of the cgroup parent group of this node's process sandboxes. */
  cgroupParent: string;
  /** The exec shim (default: where scripts/build-exec-shim.sh installs it). */
  execShim?: string;
  /** Read the kernel's settings from here (tests point it at a fake /proc/sys). */
  procSys?: string;
};

/**
 * Checks every part the process tier needs (docs/architecture.md §3) and reports the first
 * one missing, in words an operator can act on. A tier that is not ready runs nothing:
 * there is no reduced mode.
 */
export async function processPreflight(input: ProcessPreflightInput): Promise<ProcessPreflight> {
  const path = input.path ?? process.env.PATH ?? "";
  const procSys = input.procSys ?? "/proc/sys";
  if (process.getuid?.() !== 0) {
    return {
      ready: false,
      missing:
        "agent-host does not run as root: the process tier needs root to create cgroups and mounts and to start bubblewrap as uid 1000",
    };
  }
  const tools: Partial<ProcessTierParts["tools"]> = {};
  for (const name of ["bwrap", "bash", "setpriv", "unshare"] as const) {
    const found = await which(name, path);
    if (!found) {
      const pkg = {
        bwrap: "bubblewrap",
        bash: "bash",
        setpriv: "util-linux",
        unshare: "util-linux",
      }[name];
      return {
        ready: false,
        missing: `${name} is not on PATH: install Debian's ${pkg} (scripts/ensure-system.sh does)`,
      };
    }
    tools[name] = found;
  }
  const shim = await checkExecShim(input.execShim ?? DEFAULT_EXEC_SHIM);
  if (!shim.ok) return { ready: false, missing: shim.missing };
  tools.execShim = shim.path;
  const complete = tools as ProcessTierParts["tools"];
  const setid = await setidProblem(complete.bwrap);
  if (setid) return { ready: false, missing: setid };
  const version = await run(complete.bwrap, ["--version"], { timeout: PROBE_TIMEOUT_MS }).then(
    (r) => r.stdout.trim(),
    (e: Error) => `unknown (${e.message})`,
  );
  const numbers = /(\d+)\.(\d+)\.(\d+)/.exec(version)?.slice(1).map(Number);
  if (!numbers || compare(numbers, MIN_BWRAP) < 0) {
    return {
      ready: false,
      missing: `bubblewrap ${MIN_BWRAP.join(".")} or later is needed, found ${version}`,
    };
  }
  const userns = await usernsProblem(procSys);
  if (userns) return { ready: false, missing: userns };
  if (!seccompSupported()) {
    return { ready: false, missing: `no seccomp syscall table for ${process.arch}` };
  }
  const actions = await readFile(join(procSys, "kernel/seccomp/actions_avail"), "utf8").catch(
    () => "",
  );
  for (const action of ["kill_process", "errno", "allow"]) {
    if (!actions.split(/\s+/).includes(action)) {
      return {
        ready: false,
        missing: `the kernel's seccomp lacks the ${action} action (kernel/seccomp/actions_avail)`,
      };
    }
  }
  const cgroups = await detectCgroups(input.cgroupParent);
  if (!cgroups.ok) return { ready: false, missing: cgroups.missing };
  const probe = `preflight-${process.pid}`;
  try {
    await cgroups.cgroups.createSandbox(probe, {
      memoryBytes: 64 * 1024 * 1024,
      pidsLimit: 8,
      nanoCpus: 1e9,
    });
  } catch (error) {
    return {
      ready: false,
      missing: `the cgroup controllers are not writable (${(error as Error).message})`,
    };
  } finally {
    await cgroups.cgroups.kill(probe).catch(() => {});
  }
  let mounts: HostMounts;
  let spawner: HostSpawner;
  try {
    mounts = createHostMounts();
    spawner = createHostSpawner();
  } catch (error) {
    return {
      ready: false,
      missing: `glibc's mount(2) or posix_spawn cannot be bound (${(error as Error).message})`,
    };
  }
  const seccompFilter = buildSeccompFilter();
  const smoke = await smokeSandbox(complete, seccompFilter);
  if (smoke) return { ready: false, missing: smoke };
  const stateProblem = await stateDirProblem(input.stateDir);
  if (stateProblem) return { ready: false, missing: stateProblem };
  let stateDir: string;
  try {
    // Below a parent others cannot search, bwrap reaches it through an alias (0144).
    stateDir = await reachableStateDir(await realpath(input.stateDir), mounts);
  } catch (error) {
    return {
      ready: false,
      missing: `the sandbox state directory ${input.stateDir} is below a directory others cannot search and could not be made reachable for bubblewrap: ${(error as Error).message}`,
    };
  }
  return {
    ready: true,
    parts: {
      tools: complete,
      bwrapVersion: version,
      cgroups: cgroups.cgroups,
      seccompFilter,
      mounts,
      spawner,
      stateDir,
    },
    detail: `${version}, cgroup ${cgroups.cgroups.version}`,
  };
}

/**
 * The state directory holds every live sandbox's tmpfs and binds (decision 0106): root's,
 * 0711 (made so, or set so when found otherwise), each generation's own directory below
 * it searchable by that generation's owner uid alone. bwrap runs as that uid and resolves
 * its bind sources as paths (bubblewrap 0.8), so every parent must let others search it:
 * below a parent of mode 0700 the directory is reached through an alias instead
 * (state-dir-alias.ts, decision 0144).
 */
async function stateDirProblem(dir: string): Promise<string | undefined> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o711 });
    const found = await lstat(dir);
    if (!found.isDirectory() || found.uid !== 0) {
      return `the sandbox state directory ${dir} must be a directory of root's (found uid ${found.uid}); remove it or set SANDBOX_STATE_DIR elsewhere`;
    }
    if ((found.mode & 0o777) !== 0o711) await chmod(dir, 0o711);
    return undefined;
  } catch (error) {
    return `the sandbox state directory ${dir} cannot be prepared: ${(error as Error).message}`;
  }
}

/**
 * bwrap is started as an unprivileged uid without no_new_privs set beforehand (it sets it
 * itself, before it makes the sandbox): a setuid or setgid bwrap would run privileged
 * (bubblewrap's other mode, which this tier does not use), so it is refused. A bwrap
 * with file capabilities refuses to run by itself, which the smoke sandbox catches.
 */
async function setidProblem(bwrap: string): Promise<string | undefined> {
  const { mode } = await stat(bwrap);
  if ((mode & (S_ISUID | S_ISGID)) === 0) return undefined;
  return `${bwrap} is setuid or setgid: the process tier runs bubblewrap unprivileged; install Debian's bubblewrap (not setuid) or chmod u-s,g-s it`;
}

/** Unprivileged user namespaces: the kernel switches and AppArmor's restriction (Ubuntu 23.10+). */
async function usernsProblem(procSys: string): Promise<string | undefined> {
  const read = (p: string) =>
    readFile(join(procSys, p), "utf8").then(
      (t) => t.trim(),
      () => undefined,
    );
  const max = await read("user/max_user_namespaces");
  if (max !== undefined && Number(max) === 0) {
    return "user namespaces are disabled (sysctl user.max_user_namespaces = 0)";
  }
  if ((await read("kernel/unprivileged_userns_clone")) === "0") {
    return "unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone = 0)";
  }
  if ((await read("kernel/apparmor_restrict_unprivileged_userns")) === "1") {
    return "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1): allow bwrap with an AppArmor profile or set it to 0";
  }
  return undefined;
}

/**
 * One real sandbox with the tier's namespaces and seccomp filter, as uid 1000, running
 * bwrap's own binary (the Runtime Assets may not be ready yet; that is their own report).
 */
async function smokeSandbox(
  tools: ProcessTierParts["tools"],
  filter: Buffer,
): Promise<string | undefined> {
  const bwrapDir = (await realpath(tools.bwrap)).replace(/\/[^/]+$/, "");
  const out = await runSandboxProbe(
    tools.bwrap,
    [
      "--unshare-user",
      "--unshare-pid",
      "--unshare-ipc",
      "--unshare-uts",
      "--unshare-cgroup",
      "--unshare-net",
      "--disable-userns",
      "--as-pid-1",
      "--die-with-parent",
      "--clearenv",
      "--seccomp",
      "3",
      // The host's library and binary dirs, read-only, for this probe only.
      ...["/usr", "/lib", "/lib64", "/bin"].flatMap((d) => ["--ro-bind-try", d, d]),
      "--ro-bind",
      bwrapDir,
      bwrapDir,
      "--",
      join(bwrapDir, "bwrap"),
      "--version",
    ],
    // As the exec trampoline starts it: a plain uid, no supplementary group.
    { timeoutMs: PROBE_TIMEOUT_MS, env: {}, uid: 1000, gid: 1000, fd3: filter },
  );
  if (out.error) return `bubblewrap could not be started: ${out.error.message}`;
  if (out.code === 0) return undefined;
  const why = out.stopped
    ? `no answer within ${PROBE_TIMEOUT_MS} ms`
    : out.stderr.trim() || "no message";
  return `a test sandbox failed (exit ${out.code ?? out.signal}): ${why}; check that unprivileged user namespaces and seccomp work for uid 1000`;
}

async function which(name: string, path: string): Promise<string | undefined> {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, name);
    const ok = await access(candidate, constants.X_OK).then(
      () => true,
      () => false,
    );
    if (ok) return candidate;
  }
  return undefined;
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
