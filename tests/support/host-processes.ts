import { readdir, readFile } from "node:fs/promises";

/*
 * What is running on the host, read from the host's /proc: the process-tier tests check
 * that nothing a sandbox started is left behind, from outside every namespace.
 */

/** Pids whose /proc/<pid>/`file` satisfies `test` (a process gone meanwhile reads as ""). */
async function pidsWhere(file: string, test: (text: string) => boolean): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const text = await readFile(`/proc/${name}/${file}`, "utf8").catch(() => "");
    if (text !== "" && test(text)) found.push(Number(name));
  }
  return found;
}

/** Whether `pid` is a live (not zombie) process on the host. */
export async function processAlive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  return stat !== "" && !/\) [ZX] /.test(stat);
}

/** Live host processes whose real uid is `uid`. */
export function processesOfUid(uid: number): Promise<number[]> {
  return pidsWhere("status", (status) => {
    const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    const state = /^State:\s+(\S)/m.exec(status)?.[1];
    return real === String(uid) && state !== "Z" && state !== "X";
  });
}

/** Live host processes one of whose command-line arguments is exactly `needle`. */
export async function hostProcessesWith(needle: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of await pidsWhere("cmdline", (c) => c.split("\0").includes(needle))) {
    if (await processAlive(pid)) found.push(pid);
  }
  return found;
}

/** Live host processes whose cgroup path (in any hierarchy) contains `segment`. */
export async function processesInCgroup(segment: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of await pidsWhere("cgroup", (c) => c.includes(segment))) {
    if (await processAlive(pid)) found.push(pid);
  }
  return found;
}

/** Zombies whose parent is `ppid`: children it started and never reaped. */
export function zombieChildrenOf(ppid: number): Promise<number[]> {
  return pidsWhere("status", (status) => {
    const parent = /^PPid:\s+(\d+)/m.exec(status)?.[1];
    const state = /^State:\s+(\S)/m.exec(status)?.[1];
    return parent === String(ppid) && (state === "Z" || state === "X");
  });
}
