import { readFileSync } from "node:fs";
import { readlink } from "node:fs/promises";
import {
  type KillReport,
  killUntilGone,
  type ProcStat,
  parseStat,
  readAllStats,
} from "./kill-exec-processes.ts";

// The container tier's rule for what outlives a command (issue 37 item 3, decision 0106;
// the process tier gets the same from the kernel: its command is pid 1 of its own pid
// namespace, `--as-pid-1`):
// when an exec has ended, nothing it started may keep running, or its later writes land
// in no change batch or in another run's. Docker keeps no process tree per exec, so the
// host looks: whatever the exec left behind was reparented to the container's init
// (docker-init, pid 1 of the container), because its own parent had exited. Every such
// orphan is killed, with everything below it, unless it still belongs to an exec that is
// running (its session is that exec's: runc starts each exec as a session leader). A
// process that called setsid(2) and was orphaned (a deliberate daemon) no longer belongs
// to any running exec, so it is killed too; that is what the session-based kill of a
// timeout (kill-exec-processes.ts) cannot see.

/**
 * SIGKILLs every process the container's ended execs left behind (see above), repeating
 * until none is left (a process may fork while it is killed). `initPid` is the container's
 * init as a host pid (State.Pid), `pidNamespace` the readlink of its /proc/<pid>/ns/pid.
 * Most execs leave nothing: that is one read of init's children.
 */
export function killExecLeftovers(initPid: number, pidNamespace: string): Promise<KillReport> {
  return killUntilGone(() => findExecLeftovers(initPid, pidNamespace));
}

/** Live processes below the container's init that no running exec owns. */
export async function findExecLeftovers(initPid: number, pidNamespace: string): Promise<number[]> {
  const orphans = orphansOf(initPid);
  if (orphans.length === 0) return [];
  const stats = await readAllStats();
  const init = stats.get(initPid);
  if (init === undefined) return [];
  const children = childrenByParent(stats);
  // Running execs: the shim's other children in the container's namespace (runc leaves
  // each exec's process to containerd's shim, the container's init's parent too).
  const running = new Set<number>();
  for (const pid of children.get(init.ppid) ?? []) {
    if (pid === initPid || !isLive(stats.get(pid))) continue;
    if ((await pidNamespaceOf(pid)) === pidNamespace) running.add(pid);
  }
  const found: number[] = [];
  const stack = [...orphans];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    const stat = stats.get(pid);
    if (stat === undefined) continue;
    stack.push(...(children.get(pid) ?? []));
    if (isLive(stat) && !running.has(stat.session)) found.push(pid);
  }
  return found;
}

/**
 * init's live children but the keep-alive: usually none. docker-init starts the keep-alive
 * in its own session; runc starts every exec in a new one, so an exec's orphan (or a
 * daemon that called setsid) is never in init's session. Read synchronously: a few procfs
 * files the kernel fills in microseconds (decision 0028), on every exec's path, where a
 * thread-pool hop each cost more than the reads (decision 0193).
 */
function orphansOf(initPid: number): number[] {
  const init = statOf(initPid);
  if (init === undefined) return [];
  const text = readProc(`/proc/${initPid}/task/${initPid}/children`) ?? "";
  const orphans: number[] = [];
  for (const pid of text
    .split(" ")
    .filter((p) => p.trim() !== "")
    .map(Number)) {
    const child = statOf(pid);
    if (isLive(child) && child?.session !== init.session) orphans.push(pid);
  }
  return orphans;
}

function statOf(pid: number): ProcStat | undefined {
  const text = readProc(`/proc/${pid}/stat`);
  return text === undefined ? undefined : parseStat(pid, text);
}

/** A procfs file's text; undefined when the process is gone. */
function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function childrenByParent(stats: ReadonlyMap<number, ProcStat>): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const s of stats.values()) {
    const list = children.get(s.ppid);
    if (list) list.push(s.pid);
    else children.set(s.ppid, [s.pid]);
  }
  return children;
}

function isLive(stat: ProcStat | undefined): boolean {
  return stat !== undefined && stat.state !== "Z" && stat.state !== "X";
}

function pidNamespaceOf(pid: number): Promise<string | undefined> {
  return readlink(`/proc/${pid}/ns/pid`).catch(() => undefined);
}
