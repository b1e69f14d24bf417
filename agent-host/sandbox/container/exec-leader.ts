import { readFileSync } from "node:fs";
import { type ContainerFreezer, commandPids, processIds } from "./container-freezer.ts";

// A stop that Docker cannot name the command for yet (decision 0189): Docker reports a
// running exec with pid 0 until containerd has answered its start, which under load lags
// the command itself by tens of milliseconds; a write-heavy command wrote ~15 MiB more in
// the time it took to thaw the container and ask Docker again. With the container frozen,
// the command is found on the host instead: runc starts every exec as a session leader,
// and the leader's argv is the one the exec was created with (the wrapper's, or the
// command's once the wrapper has `exec`ed it, same pid).

/**
 * The pid of the one session leader in the frozen group whose argv is one of `argvs`, or
 * undefined when none is (the exec is still in runc, or already gone) or more than one is
 * (two commands alike in one sandbox): the caller then asks Docker as before. Synchronous,
 * as every read of a stop (container-freezer.ts).
 */
export function frozenExecLeader(
  freezer: ContainerFreezer,
  argvs: readonly (readonly string[])[],
): number | undefined {
  const wanted = new Set(argvs.map((argv) => argv.map((arg) => `${arg}\0`).join("")));
  const leaders = commandPids(freezer).filter(
    (pid) => processIds(pid).session === pid && wanted.has(cmdlineOf(pid)),
  );
  return leaders.length === 1 ? leaders[0] : undefined;
}

/** A process's argv as the kernel keeps it (each argument NUL-terminated); "" if gone. */
function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}
