import { accessSync, readFileSync, writeFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";

// The container tier's host-side hold on a sandbox container (decision 0179): its own
// cgroup, found without asking Docker, so that a stop (a quota stop, a timeout, a cancel)
// freezes every process of the container at once and kills the command's processes while
// nothing in it can run, whatever dockerd's latency. The process tier does the same with
// the exec's own cgroup (process/sandbox-cgroups.ts); Docker gives an exec none, so the
// container's group is frozen and only the command's processes are killed in it.
//
// Layouts: cgroup v2 (`cgroup.freeze`, in which a frozen process still dies of SIGKILL)
// where the container has a v2 group, the unified hierarchy of a pure v2 host or the
// hybrid's /sys/fs/cgroup/unified (these machines: Docker's cgroupfs driver puts every
// container in `docker/<id>` of each hierarchy, the hybrid's cgroup2 included); else the
// v1 freezer (`freezer.state`, in which a frozen process dies of SIGKILL once thawed).
// Docker's cgroupfs driver names the group `<parent>/<id>`, its systemd driver
// `system.slice/docker-<id>.scope`.

const CGROUP_FS = "/sys/fs/cgroup";
const CGROUP2_MOUNTS = [CGROUP_FS, join(CGROUP_FS, "unified")] as const;
const FULL_ID = /^[0-9a-f]{64}$/;

export type ContainerFreezer = {
  /** The container's own group; its last component names the container's full id. */
  readonly dir: string;
  readonly version: "v1" | "v2";
};

/**
 * The container's own cgroup, or undefined when none is found in a layout this host has.
 * Synchronous, as every read and write of a stop here: procfs and cgroupfs answer from
 * memory, and a stop must not queue in the thread pool behind the quota watch's walks of
 * the disk (as 0086 for the process tier's cgroups).
 * `initPid` (the container's init, a host pid, when known) finds a group below any cgroup
 * parent; without it the default parents are tried. Any candidate is accepted only when
 * its last component names `containerId` in full, so a stale or reused init pid (which
 * names another container's group) can never yield another container's group.
 */
export function findContainerFreezer(
  containerId: string,
  initPid?: number,
): ContainerFreezer | undefined {
  if (!FULL_ID.test(containerId)) return undefined;
  const paths = [
    ...(initPid === undefined ? [] : procCgroupPaths(initPid)),
    ...defaultPaths(containerId),
  ];
  for (const candidate of paths.flatMap(candidatesOf)) {
    if (!namesContainer(candidate.dir, containerId)) continue;
    if (exists(join(candidate.dir, controlFile(candidate)))) return candidate;
  }
  return undefined;
}

/** Whether `dir`'s last component is Docker's name for the container's group. */
export function namesContainer(dir: string, containerId: string): boolean {
  const last = basename(dir);
  return last === containerId || last === `docker-${containerId}.scope`;
}

/** Stops every process of the group at its next return to user space (synchronous). */
export function freeze(freezer: ContainerFreezer): void {
  writeFileSync(join(freezer.dir, controlFile(freezer)), freezer.version === "v2" ? "1" : "FROZEN");
}

/** Lets the group run again (what was sent SIGKILL while frozen dies now, in v1). */
export async function thaw(freezer: ContainerFreezer): Promise<void> {
  await writeFile(
    join(freezer.dir, controlFile(freezer)),
    freezer.version === "v2" ? "0" : "THAWED",
  );
}

/** Whether the group is (being) frozen: what was last asked of it, by anyone. */
export async function isFrozen(freezer: ContainerFreezer): Promise<boolean> {
  const state = (await readFile(join(freezer.dir, controlFile(freezer)), "utf8")).trim();
  return freezer.version === "v2" ? state === "1" : state !== "THAWED";
}

/** The group's pids, read synchronously (cgroupfs is filled from memory, as in 0086). */
export function groupPids(freezer: ContainerFreezer): number[] {
  let text = "";
  try {
    text = readFileSync(join(freezer.dir, "cgroup.procs"), "utf8");
  } catch {
    return []; // the group is gone: the container stopped with everything in it
  }
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map(Number);
}

/**
 * The group's processes that belong to commands: all but the container's init (pid 1 of
 * its namespace) and the keep-alive, which docker-init starts in its own session, while
 * runc starts every exec in a new session (exec-leftovers.ts relies on the same).
 */
export function commandPids(freezer: ContainerFreezer): number[] {
  const members = groupPids(freezer).map((pid) => ({ pid, ...processIds(pid) }));
  const init = members.find((m) => m.nsPid === 1);
  if (init === undefined) return []; // init gone: the container stops with everything in it
  return members.filter((m) => m.pid !== init.pid && m.session !== init.session).map((m) => m.pid);
}

/** A process's session (host) and its pid in its own namespace, from procfs. */
export function processIds(pid: number): { session?: number; nsPid?: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const session = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]);
    const nsPids = readFileSync(`/proc/${pid}/status`, "utf8").match(/^NSpid:\s+(.+)$/m)?.[1];
    const nsPid = Number(nsPids?.trim().split(/\s+/).at(-1));
    return { session, nsPid };
  } catch {
    return {}; // gone meanwhile
  }
}

/** SIGKILL, a process already gone counting as killed. */
export function signalKill(pid: number): boolean {
  try {
    process.kill(pid, "SIGKILL");
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
    return false;
  }
}

function controlFile(freezer: ContainerFreezer): string {
  return freezer.version === "v2" ? "cgroup.freeze" : "freezer.state";
}

type CgroupPaths = { v2?: string; v1?: string };

/** The v2 (`0::`) and v1 freezer paths of a process, from /proc/<pid>/cgroup. */
function procCgroupPaths(pid: number): CgroupPaths[] {
  let text = "";
  try {
    text = readFileSync(`/proc/${pid}/cgroup`, "utf8");
  } catch {
    return []; // no such process: the default parents are tried
  }
  const found: CgroupPaths = {};
  for (const line of text.split("\n")) {
    const [, controllers, path] = line.match(/^\d+:([^:]*):(.+)$/) ?? [];
    if (path === undefined) continue;
    if (controllers === "") found.v2 = path;
    else if (controllers?.split(",").includes("freezer")) found.v1 = path;
  }
  return [found];
}

function defaultPaths(containerId: string): CgroupPaths[] {
  return [`/docker/${containerId}`, `/system.slice/docker-${containerId}.scope`].map((path) => ({
    v2: path,
    v1: path,
  }));
}

function candidatesOf(paths: CgroupPaths): ContainerFreezer[] {
  const v2 =
    paths.v2 === undefined
      ? []
      : CGROUP2_MOUNTS.map((mount) => ({
          dir: join(mount, paths.v2 as string),
          version: "v2" as const,
        }));
  const v1 =
    paths.v1 === undefined
      ? []
      : [{ dir: join(CGROUP_FS, "freezer", paths.v1), version: "v1" as const }];
  return [...v2, ...v1];
}

function exists(path: string): boolean {
  try {
    accessSync(path);
    return true;
  } catch {
    return false;
  }
}
