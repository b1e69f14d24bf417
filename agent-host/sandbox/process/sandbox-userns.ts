import { randomInt } from "node:crypto";
import { closeSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { Socket } from "node:net";
import { createInterface } from "node:readline";
import type { HostMounts } from "../instance/host-mounts.ts";
import { SANDBOX_GID, SANDBOX_UID } from "./bwrap-args.ts";
import type { HostSpawner, SpawnExit } from "./host-spawner.ts";

/**
 * Host uids that own sandbox user namespaces: a random one per generation, from a range
 * no distribution hands out (uids past 2^30), so it owns no file and no other process.
 * Two live generations draw the same one with probability about n^2 / 2^31 (n = 100:
 * 5e-6); they would then share one kernel budget, nothing else.
 */
const OWNER_UID_MIN = 2 ** 30;
const OWNER_UID_MAX = 2 ** 31 - 2;
const HOLDER_TIMEOUT_MS = 10_000;

/** What starts the holder: posix_spawn and the host tools preflight resolved (absolute paths). */
export type UsernsHolderDeps = {
  mounts: HostMounts;
  spawner: HostSpawner;
  tools: { setpriv: string; unshare: string; bash: string };
};

/**
 * The holder: `unshare --user --keep-caps`, started as the owner uid (`setpriv`: all three
 * uids and gids, no supplementary group, so no host capability), makes the namespace and
 * keeps the capabilities it has there across the exec of bash (ambient), which uses them
 * once to forbid nested user namespaces, prints `ready`, then waits for stdin to close
 * while root writes the maps and pins the namespace. It is started with posix_spawn
 * (host-spawner.ts), not Node's spawn: a fork of agent-host on every process-tier create
 * stalled its event loop in proportion to its memory (decision 0119).
 */
const HOLDER_SCRIPT =
  "echo 0 > /proc/sys/user/max_user_namespaces && echo ready && { read _ || :; }";

/**
 * Makes the user namespace of one process-tier generation and pins it at `nsFile` (a bind
 * mount of the nsfs inode, as `ip netns` does, so it lives as long as the generation and
 * survives an agent-host restart). Returns the host uid that owns it.
 *
 * Why (docs/architecture.md §9, "tenants share no kernel budget"): the kernel counts inotify
 * instances and watches, user namespaces and processes per (user namespace, uid), and
 * charges every level up to the initial namespace to the uid that *created* each
 * namespace. bwrap creating the namespace as uid 1000 charged every sandbox of every
 * tenant (and every container, which runs as host 1000) to the one host uid 1000: one
 * tenant exhausting 128 inotify instances broke everyone's. Here each generation's
 * namespace is created by its own unused host uid, so each gets the host's whole
 * per-uid budget, and no sandbox can spend another's.
 *
 * The maps: sandbox uid/gid 1000 is host 1000 (UserWorkspace files stay 1000:1000 on the
 * host), and nothing else is mapped. bwrap runs as the owner uid (joining the namespace
 * with --userns needs that; the owner has the namespace's capabilities, no host ones),
 * sets the sandbox up, then becomes 1000 with no capabilities. `max_user_namespaces = 0` in
 * the namespace replaces bwrap's --disable-userns (which 0.8 allows only with
 * --unshare-user): nothing in the sandbox can make a namespace of its own.
 */
export async function createSandboxUserns(
  nsFile: string,
  deps: UsernsHolderDeps,
  signal: AbortSignal,
): Promise<number> {
  signal.throwIfAborted();
  const owner = randomInt(OWNER_UID_MIN, OWNER_UID_MAX);
  await writeFile(nsFile, "", { mode: 0o600 });
  const holder = startHolder(deps, owner);
  // Bounded as Node's spawn bounded it (its signal and timeout), by killing the holder:
  // its output then ends and whatever waits on it fails.
  const stop = AbortSignal.any([signal, AbortSignal.timeout(HOLDER_TIMEOUT_MS)]);
  const onStop = () => holder.kill();
  stop.addEventListener("abort", onStop, { once: true });
  // stdout and stderr are one socket: the first line is `ready`, or what went wrong.
  const lines = createInterface({ input: holder.output })[Symbol.asyncIterator]();
  try {
    const first = await lines.next();
    if (first.done || first.value !== "ready") {
      holder.kill();
      const said = first.done ? [] : [first.value];
      for (let line = await lines.next(); !line.done; line = await lines.next()) {
        said.push(line.value);
      }
      throw new Error(
        `the user namespace holder did not say ready: ${said.join("\n").trim() || "it exited"}`,
      );
    }
    // Root writes them (CAP_SETUID/CAP_SETGID in the parent namespace): the owner itself
    // could map only its own uid.
    await writeFile(`/proc/${holder.pid}/uid_map`, `${SANDBOX_UID} ${SANDBOX_UID} 1\n`);
    await writeFile(`/proc/${holder.pid}/gid_map`, `${SANDBOX_GID} ${SANDBOX_GID} 1\n`);
    deps.mounts.bind(`/proc/${holder.pid}/ns/user`, nsFile);
    holder.input.end();
    const exit = await holder.exited;
    if (exit.code !== 0) {
      throw new Error(`the user namespace holder exited with ${exit.code ?? exit.signal}`);
    }
    return owner;
  } catch (error) {
    holder.kill();
    await holder.exited;
    throw error;
  } finally {
    stop.removeEventListener("abort", onStop);
    holder.input.destroy();
    holder.output.destroy();
  }
}

type Holder = {
  pid: number;
  exited: Promise<SpawnExit>;
  /** The holder's stdin. */
  input: Socket;
  /** Its stdout and stderr. */
  output: Socket;
  /** SIGKILL, unless it was reaped already. */
  kill(): void;
};

/** posix_spawn of setpriv → unshare → bash, with two socket pairs as its stdio. */
function startHolder(deps: UsernsHolderDeps, owner: number): Holder {
  const { spawner, tools } = deps;
  const input = spawner.socketPair();
  let output: [number, number];
  try {
    output = spawner.socketPair();
  } catch (error) {
    for (const fd of input) closeSync(fd);
    throw error;
  }
  let started: ReturnType<HostSpawner["spawn"]>;
  try {
    started = spawner.spawn({
      file: tools.setpriv,
      argv: [
        "setpriv",
        `--reuid=${owner}`,
        `--regid=${owner}`,
        "--clear-groups",
        "--",
        tools.unshare,
        "--user",
        "--keep-caps",
        "--",
        tools.bash,
        "-c",
        HOLDER_SCRIPT,
      ],
      fds: [input[1], output[1], output[1]],
    });
  } catch (error) {
    closeSync(input[0]);
    closeSync(output[0]);
    throw error;
  } finally {
    // The child has its copies (or there is no child): agent-host's are closed.
    closeSync(input[1]);
    closeSync(output[1]);
  }
  let reaped = false;
  const exited = started.exited.then((exit) => {
    reaped = true;
    return exit;
  });
  return {
    pid: started.pid,
    exited,
    input: new Socket({ fd: input[0], readable: false, writable: true }),
    output: new Socket({ fd: output[0], readable: true, writable: false }),
    kill() {
      if (reaped) return;
      try {
        process.kill(started.pid, "SIGKILL");
      } catch {
        // Already gone (ESRCH): its exit is being reaped.
      }
    },
  };
}
