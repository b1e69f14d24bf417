import { readlink } from "node:fs/promises";
import type { Logger } from "pino";
import {
  type ContainerFreezer,
  commandPids,
  findContainerFreezer,
  freeze,
  groupPids,
  signalKill,
  thaw,
} from "./container-freezer.ts";
import { frozenExecLeader } from "./exec-leader.ts";
import { findExecProcesses } from "./kill-exec-processes.ts";

/**
 * How a stop went on the host, before Docker is asked anything (decision 0179):
 * - `killed`: the container was frozen and the command's processes sent SIGKILL in it;
 * - `not_started`: Docker says the command never started (nothing to kill), or has not
 *   named its process yet (the caller asks again once the group is thawed);
 * - `commands_killed`: Docker did not say which process is the command, so every
 *   command running in the container was killed (its init and keep-alive were not: the
 *   sandbox stays usable); the caller's Docker kill then reports Docker's error;
 * - `no_cgroup`: no group of the container was found; the caller stops it through
 *   Docker as before.
 */
/**
 * Stops in progress per frozen group (the driver's, like its pid memo): two commands of
 * one container stopped at once (a run's parallel tool calls, one uid's quota ledger)
 * thaw it only when the second is done, so neither writer runs again in between.
 */
export type FreezeHolds = Map<string, number>;

export type FrozenStop = "killed" | "not_started" | "commands_killed" | "no_cgroup";

/**
 * Stops a command at once, independent of dockerd: freezes the container's cgroup (every
 * process in it stops writing at its next return to user space), then, with nothing in
 * the container able to run or fork, SIGKILLs the command's processes (its session and
 * descendants, and only processes of this group), then thaws: the rest of the sandbox
 * runs on. The command's host pid comes from `askPid` (Docker), asked right after the
 * freeze; while that is in flight the container stays frozen, so the bound does not wait
 * for Docker even then. The caller's Docker kill afterwards confirms and sweeps leftovers
 * (docker-exec.ts).
 */
export async function stopExecFrozen(
  log: Logger,
  container: {
    instanceId: string;
    initPid: number | undefined;
    holds?: FreezeHolds;
    /** The exec's argv, wrapped and not: finds it while Docker has no pid (exec-leader.ts). */
    argvs?: readonly (readonly string[])[];
  },
  askPid: () => Promise<number | "starting" | undefined>,
): Promise<FrozenStop> {
  // No await before the freeze: the writer stops within this turn of the event loop.
  const freezer = findContainerFreezer(container.instanceId, container.initPid);
  if (freezer === undefined) return "no_cgroup";
  try {
    freeze(freezer);
  } catch (error) {
    // The group went away (the container stopped) or cannot be written: Docker's way.
    log.warn({ err: error, cgroup: freezer.dir }, "could not freeze a sandbox container");
    return "no_cgroup";
  }
  // Asked only now: starting Docker's request took milliseconds the writer wrote on in.
  const execPid = askPid();
  const holds = container.holds ?? new Map<string, number>();
  holds.set(freezer.dir, (holds.get(freezer.dir) ?? 0) + 1);
  let outcome: FrozenStop = "killed";
  try {
    // A command Docker has not named yet is found in the frozen group by its argv; one
    // still in runc's start (frozen too, so it has run nothing yet) is not: the group
    // thaws and the caller's kill through Docker finds it then (docker-exec.ts).
    const pid = await execPid.then(
      (found) =>
        found === "starting"
          ? (frozenExecLeader(freezer, container.argvs ?? []) ?? ("not_started" as const))
          : (found ?? ("not_started" as const)),
      () => "unknown" as const,
    );
    if (pid === "not_started") outcome = "not_started";
    else if (pid === "unknown") {
      for (const member of commandPids(freezer)) signalKill(member);
      outcome = "commands_killed";
    } else {
      const killed = await killExecIn(freezer, pid);
      log.debug({ pid, killed, cgroup: freezer.dir }, "killed a command in its frozen container");
    }
  } finally {
    const left = (holds.get(freezer.dir) ?? 1) - 1;
    if (left > 0) holds.set(freezer.dir, left);
    else holds.delete(freezer.dir);
    // Another stop in the same container still holds it frozen: that one thaws it.
    if (left === 0)
      await thaw(freezer).catch((error: unknown) => {
        // A group that is gone needs no thaw; any other failure leaves the sandbox frozen,
        // which its next command would hang on: say so loudly.
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
          log.error({ err: error, cgroup: freezer.dir }, "could not thaw a sandbox container");
        }
      });
  }
  return outcome;
}

/** SIGKILLs the exec's processes that are members of the frozen group; returns how many. */
async function killExecIn(freezer: ContainerFreezer, execPid: number): Promise<number> {
  const members = new Set(groupPids(freezer));
  // The container's pid namespace, from any member (every process of a container's group
  // lives in its pid namespace): findExecProcesses filters to it.
  const [first] = members;
  const pidNamespace =
    first === undefined ? "" : await readlink(`/proc/${first}/ns/pid`).catch(() => "");
  if (pidNamespace === "") return 0;
  let killed = 0;
  for (const pid of await findExecProcesses(execPid, pidNamespace)) {
    if (members.has(pid) && signalKill(pid)) killed++;
  }
  return killed;
}
