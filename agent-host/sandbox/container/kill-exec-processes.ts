import { readdir, readFile, readlink } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";

// Docker has no "kill exec" API, and closing the attach stream leaves the process
// running (docs/architecture.md §4, issue 5 §2). So a timed-out or cancelled exec is killed
// from the host, through the pid Docker reports for it (ExecInspect.Pid, a host pid).
// This needs agent-host to share the host pid namespace with dockerd, which is how it
// is installed (a daemon on the node); docs/decisions/0005 records it.
//
// What is killed: runc starts every exec as a session leader (setsid), so the exec's
// session id is its own pid and every process it starts inherits that session unless
// it calls setsid(2) itself; processes that did are still caught while they descend
// from the exec by parent pid. Only a process that both calls setsid and is orphaned
// (a deliberate daemon) escapes; it stays confined to this one execution tree's
// sandbox and dies with it (destroy, idle reaper). Everything is filtered to the
// container's pid namespace, so no host process can ever match.

const KILL_ROUNDS_MAX = 100;
const KILL_ROUND_DELAY_MS = 10;

export type ProcStat = { pid: number; state: string; ppid: number; session: number };

export type KillReport = {
  /** Processes sent SIGKILL. */
  killed: number;
  /** Live processes of the exec still found after the last round (0 = verified gone). */
  survivors: number;
};

/**
 * SIGKILLs the exec whose host pid is `execPid` and every process of its session or
 * below it, repeating until none is left alive (a process may fork while we kill).
 * `pidNamespace` is the container's (readlink of /proc/<init pid>/ns/pid).
 */
export function killExecProcesses(
  execPid: number,
  pidNamespace: string,
  signal?: AbortSignal,
): Promise<KillReport> {
  return killUntilGone(() => findExecProcesses(execPid, pidNamespace), signal);
}

/**
 * SIGKILLs what `find` lists, round after round, until it lists nothing (a process may
 * fork while it is killed) or the rounds run out; an aborted `signal` ends the rounds
 * early. The survivors are what `find` still lists at the end.
 */
export async function killUntilGone(
  find: () => Promise<number[]>,
  signal?: AbortSignal,
): Promise<KillReport> {
  let killed = 0;
  for (let round = 0; round < KILL_ROUNDS_MAX; round++) {
    const targets = await find();
    if (targets.length === 0) return { killed, survivors: 0 };
    for (const pid of targets) {
      try {
        process.kill(pid, "SIGKILL");
        killed++;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
      }
    }
    if (signal?.aborted) break;
    await sleep(KILL_ROUND_DELAY_MS);
  }
  return { killed, survivors: (await find()).length };
}

/** Live (non-zombie) processes of the exec's session or descending from it. */
export async function findExecProcesses(execPid: number, pidNamespace: string): Promise<number[]> {
  const stats = await readAllStats();
  const children = new Map<number, number[]>();
  for (const s of stats.values()) {
    const list = children.get(s.ppid);
    if (list) list.push(s.pid);
    else children.set(s.ppid, [s.pid]);
  }
  const found = new Set<number>();
  const stack = [execPid];
  while (stack.length > 0) {
    const pid = stack.pop() as number;
    if (found.has(pid)) continue;
    if (stats.has(pid)) found.add(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  for (const s of stats.values()) if (s.session === execPid) found.add(s.pid);

  const live: number[] = [];
  for (const pid of found) {
    const s = stats.get(pid);
    if (!s || s.state === "Z" || s.state === "X") continue;
    const ns = await readlink(`/proc/${pid}/ns/pid`).catch(() => undefined);
    if (ns === pidNamespace) live.push(pid);
  }
  return live;
}

/** Every process's stat on the host, by host pid. */
export async function readAllStats(): Promise<Map<number, ProcStat>> {
  const names = await readdir("/proc");
  const stats = new Map<number, ProcStat>();
  await Promise.all(
    names.map(async (name) => {
      const pid = Number(name);
      if (!Number.isInteger(pid)) return;
      const text = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
      const stat = text === undefined ? undefined : parseStat(pid, text);
      if (stat) stats.set(pid, stat);
    }),
  );
  return stats;
}

/** /proc/<pid>/stat: the command name may contain spaces and ')', so parse after the last ')'. */
export function parseStat(pid: number, text: string): ProcStat | undefined {
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const [state, ppid, , session] = rest;
  if (state === undefined || ppid === undefined || session === undefined) return undefined;
  return { pid, state, ppid: Number(ppid), session: Number(session) };
}
