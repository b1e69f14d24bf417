import { closeSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { writeFile } from "node:fs/promises";
import { Socket } from "node:net";
import type { Readable, Writable } from "node:stream";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import { CHILD_FD, TRAMPOLINE_SCRIPT } from "./bwrap-args.ts";
import type { HostSpawner, SpawnExit } from "./host-spawner.ts";
import type { EmptiedGroup } from "./sandbox-cgroups.ts";

export type TrampolineDeps = {
  tools: { bash: string; bwrap: string; setpriv: string; execShim: string };
  seccompFilter: Buffer;
  /** posix_spawn, not a fork of agent-host (decision 0083). */
  spawner: HostSpawner;
};

export type TrampolineTarget = {
  /** The generation's user namespace and the host uid owning it (sandbox-userns.ts). */
  userns: { handle: FileHandle; owner: number };
  /** cgroup.procs files agent-host puts the trampoline in before it may become bwrap. */
  cgroupProcs: string[];
  /** Kills everything in the exec's cgroup (its whole process tree) and removes the group. */
  killTree(): Promise<{ survivors: number }>;
  /** The same, resolving once the group is confirmed empty; its removal goes on after. */
  emptyTree(): Promise<EmptiedGroup>;
};

export type ChildExit = SpawnExit;

/** The trampoline's process as agent-host sees it: its pid, its sockets, its exit. */
export type TrampolineChild = {
  /** Undefined when it could not be started. */
  readonly pid: number | undefined;
  /** Index = the child's descriptor; undefined for the namespace's (agent-host's own handle). */
  readonly stdio: ReadonlyArray<Socket | undefined>;
  readonly stdin: Writable | undefined;
  readonly stdout: Readable | undefined;
  readonly stderr: Readable | undefined;
  /** Set once it was reaped (null before, as with Node's ChildProcess). */
  readonly exitCode: number | null;
  readonly signalCode: NodeJS.Signals | null;
  /** Signals it unless it was reaped (an unreaped pid cannot have been reused). */
  kill(signal: NodeJS.Signals): void;
};

/**
 * An exec's first process: `bash` started as the namespace's owner, put (`joined`) into
 * the exec's cgroups, then given its go-ahead and bwrap's command line (which names no
 * exec) on its args fd, when it becomes bwrap and builds the sandbox (prebuilt-sandbox.ts).
 * So it is started ahead of its exec (decisions 0076, 0088, exec-standby.ts), born into,
 * and staying in, its own exec cgroup; the exec itself arrives on the spec fd.
 */
export type Trampoline = {
  readonly child: TrampolineChild;
  /** Settles when the cgroup join did; rejects with the write's error. */
  readonly joined: Promise<void>;
  readonly exited: Promise<ChildExit>;
  /** Both output streams closed (after exit, once the kernel killed what was left). */
  readonly outputDone: Promise<void>;
  readonly killTree: TrampolineTarget["killTree"];
  readonly emptyTree: TrampolineTarget["emptyTree"];
  /** Whether it has not exited (a standby may have been killed while it waited). */
  alive(): boolean;
  pipe(fd: number): Readable & Writable;
};

/** Starts the trampoline and its cgroup join at once (the join needs only its pid). */
export function startTrampoline(deps: TrampolineDeps, target: TrampolineTarget): Trampoline {
  const { child, exited } = spawnChild(deps, target);
  exited.catch(() => {});
  const outputDone = Promise.all(
    [child.stdout, child.stderr].map(
      (s) => new Promise<void>((resolve) => (s ? s.once("close", () => resolve()) : resolve())),
    ),
  ).then(() => {});
  const pipe = (i: number) => child.stdio[i] as Readable & Writable;
  for (const fd of [
    0,
    CHILD_FD.seccomp,
    CHILD_FD.block,
    CHILD_FD.go,
    CHILD_FD.args,
    CHILD_FD.spec,
  ]) {
    pipe(fd)?.on("error", () => {});
  }
  // The filter is the same for every exec; bwrap reads it only inside the sandbox.
  pipe(CHILD_FD.seccomp)?.end(deps.seccompFilter);
  const joined =
    child.pid === undefined
      ? exited.then(() => {
          throw new Error("the trampoline did not start");
        })
      : Promise.all(target.cgroupProcs.map((file) => writeFile(file, String(child.pid)))).then(
          () => {},
        );
  joined.catch(() => {});
  return {
    child,
    joined,
    exited,
    outputDone,
    killTree: target.killTree,
    emptyTree: target.emptyTree,
    alive: () => child.exitCode === null && child.signalCode === null,
    pipe,
  };
}

/** Which of the child's descriptors agent-host reads (the rest it writes). */
const READ_FDS = new Set<number>([1, 2, CHILD_FD.status]);
const FD_COUNT = CHILD_FD.spec + 1;

/**
 * `bash` as the namespace's owner with its own gid as the one supplementary group (bwrap,
 * uid 1000 by the time it binds, passes through the generation's directories by it alone:
 * decision 0106; no group of agent-host's),
 * an empty environment, and descriptors in CHILD_FD's order: 0 stdin (always a socket: the
 * request's bytes, or closed empty), 1 stdout, 2 stderr, 3 seccomp, 4 status, 5 block,
 * 6 the user namespace, 7 go, 8 bwrap's arguments, 9 the exec's spec (for the shim,
 * decision 0088). posix_spawn cannot change uids, so
 * util-linux's `setpriv` does that and execs bash: setresuid sets all three uids, which
 * clears every capability, as Node's `spawn` with `uid` did.
 */
function spawnChild(
  deps: TrampolineDeps,
  target: TrampolineTarget,
): { child: TrampolineChild; exited: Promise<ChildExit> } {
  const pairs: Array<[number, number] | undefined> = [];
  const childFds: number[] = [];
  try {
    for (let fd = 0; fd < FD_COUNT; fd++) {
      if (fd === CHILD_FD.userns) {
        pairs.push(undefined);
        childFds.push(target.userns.handle.fd);
        continue;
      }
      const pair = deps.spawner.socketPair();
      pairs.push(pair);
      childFds.push(pair[1]);
    }
  } catch (error) {
    for (const fd of pairs.flat()) if (fd !== undefined) closeSync(fd);
    throw error;
  }
  const owner = String(target.userns.owner);
  let started: ReturnType<HostSpawner["spawn"]> | undefined;
  let failure: unknown;
  try {
    started = deps.spawner.spawn({
      file: deps.tools.setpriv,
      argv: [
        "setpriv",
        `--reuid=${owner}`,
        `--regid=${owner}`,
        // One supplementary group, the owner's own gid: the only group that may pass
        // through the generation's directories, which bwrap resolves (decision 0106).
        `--groups=${owner}`,
        "--",
        deps.tools.bash,
        "-c",
        TRAMPOLINE_SCRIPT,
        "trampoline",
        deps.tools.bwrap,
      ],
      fds: childFds,
    });
  } catch (error) {
    failure = error;
  } finally {
    // The child has its copies (or there is no child): agent-host's are closed.
    for (const pair of pairs) if (pair) closeSync(pair[1]);
  }
  const stdio = pairs.map((pair, fd) =>
    pair === undefined
      ? undefined
      : new Socket({ fd: pair[0], readable: READ_FDS.has(fd), writable: !READ_FDS.has(fd) }),
  );
  let exit: ChildExit | undefined;
  const exited = started
    ? started.exited.then((e) => {
        exit = e;
        return e;
      })
    : Promise.reject(failure);
  const pid = started?.pid;
  const child: TrampolineChild = {
    pid,
    stdio,
    stdin: stdio[0],
    stdout: stdio[1],
    stderr: stdio[2],
    get exitCode() {
      return started ? (exit?.code ?? null) : -1;
    },
    get signalCode() {
      return exit?.signal ?? null;
    },
    kill(signal) {
      if (pid === undefined || exit !== undefined) return;
      try {
        process.kill(pid, signal);
      } catch {
        // Already gone (ESRCH): its exit is being reaped.
      }
    },
  };
  return { child, exited };
}

/**
 * bwrap's command line as the trampoline's `mapfile -d ''` reads it: NUL-terminated
 * strings. A NUL inside one would split it into two bwrap arguments (an option smuggled
 * in by a command), so it is refused; exec(2) could not have carried it anyway.
 */
export function encodeBwrapArgs(args: readonly string[]): Buffer {
  for (const arg of args) {
    if (arg.includes("\0")) {
      throw new WorkcellError(
        "invalid_request",
        "An exec argument contains a NUL byte: arguments cannot carry NUL; pass the data on stdin or in a file.",
      );
    }
  }
  return Buffer.from(args.map((a) => `${a}\0`).join(""), "utf8");
}
