import { readdir, readFile } from "node:fs/promises";

/*
 * What is running on the host, read from the host's /proc: the process-tier tests check
 * that nothing a sandbox started is left behind, from outside every namespace.
 */

/** Whether `pid` is a live (not zombie) process on the host. */
export async function processAlive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  return stat !== "" && !/\) [ZX] /.test(stat);
}

/** Live host processes whose real uid is `uid`. */
export async function processesOfUid(uid: number): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const status = await readFile(`/proc/${name}/status`, "utf8").catch(() => "");
    const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
    const state = /^State:\s+(\S)/m.exec(status)?.[1];
    if (real === String(uid) && state !== "Z" && state !== "X") found.push(Number(name));
  }
  return found;
}

/** Live host processes one of whose command-line arguments is exactly `needle`. */
export async function hostProcessesWith(needle: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "");
    if (cmdline.split("\0").includes(needle) && (await processAlive(Number(name)))) {
      found.push(Number(name));
    }
  }
  return found;
}

/** Zombies whose parent is `ppid`: children it started and never reaped. */
export async function zombieChildrenOf(ppid: number): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const status = await readFile(`/proc/${name}/status`, "utf8").catch(() => "");
    const parent = /^PPid:\s+(\d+)/m.exec(status)?.[1];
    const state = /^State:\s+(\S)/m.exec(status)?.[1];
    if (parent === String(ppid) && (state === "Z" || state === "X")) found.push(Number(name));
  }
  return found;
}
