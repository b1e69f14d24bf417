import { type ChildProcess, spawn } from "node:child_process";
import type { FileHandle } from "node:fs/promises";
import { writeFile } from "node:fs/promises";
import type { Readable, Writable } from "node:stream";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import { CHILD_FD, TRAMPOLINE_SCRIPT } from "./bwrap-args.ts";

export type TrampolineDeps = {
  tools: { bash: string; bwrap: string };
  seccompFilter: Buffer;
};

export type TrampolineTarget = {
  /** The generation's user namespace and the host uid owning it (sandbox-userns.ts). */
  userns: { handle: FileHandle; owner: number };
  /** cgroup.procs files agent-host puts the trampoline in before it may become bwrap. */
  cgroupProcs: string[];
  /** Kills everything in the exec's cgroup (its whole process tree) and removes the group. */
  killTree(): Promise<{ survivors: number }>;
};

export type ChildExit = { code: number | null; signal: NodeJS.Signals | null };

/**
 * An exec's first process before its go-ahead: `bash` started as the namespace's owner,
 * being put (`joined`) into the exec's cgroups, waiting to become bwrap. It
 * knows nothing of the command yet: the whole bwrap command line arrives on its args fd
 * with the go-ahead (process-exec.ts), so one can be started ahead of its exec (decision
 * 0076, exec-standby.ts) and still be born into, and stay in, its own exec cgroup.
 */
export type Trampoline = {
  readonly child: ChildProcess;
  /** Settles when the cgroup join did; rejects with the write's error. */
  readonly joined: Promise<void>;
  readonly exited: Promise<ChildExit>;
  /** Both output streams closed (after exit, once the kernel killed what was left). */
  readonly outputDone: Promise<void>;
  readonly killTree: TrampolineTarget["killTree"];
  /** Whether it has not exited (a standby may have been killed while it waited). */
  alive(): boolean;
  pipe(fd: number): Readable & Writable;
};

/** Starts the trampoline and its cgroup join at once (the join needs only its pid). */
export function startTrampoline(deps: TrampolineDeps, target: TrampolineTarget): Trampoline {
  const child = spawn(deps.tools.bash, ["-c", TRAMPOLINE_SCRIPT, "trampoline", deps.tools.bwrap], {
    // Order is CHILD_FD's: 3 seccomp, 4 status, 5 block, 6 the user namespace, 7 go,
    // 8 bwrap's arguments. stdin is always a pipe: the request's bytes, or closed empty.
    stdio: [
      "pipe",
      "pipe",
      "pipe",
      "pipe",
      "pipe",
      "pipe",
      target.userns.handle.fd,
      "pipe",
      "pipe",
    ],
    env: {},
    // The namespace's owner, no supplementary group (TRAMPOLINE_SCRIPT says why).
    uid: target.userns.owner,
    gid: target.userns.owner,
  });
  const exited = new Promise<ChildExit>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, sig) => resolve({ code, signal: sig }));
  });
  exited.catch(() => {});
  const outputDone = Promise.all(
    [child.stdout, child.stderr].map(
      (s) => new Promise<void>((resolve) => (s ? s.once("close", () => resolve()) : resolve())),
    ),
  ).then(() => {});
  const pipe = (i: number) => child.stdio[i] as Readable & Writable;
  for (const fd of [0, CHILD_FD.seccomp, CHILD_FD.block, CHILD_FD.go, CHILD_FD.args]) {
    pipe(fd)?.on("error", () => {});
  }
  // The filter is the same for every exec; bwrap reads it only inside the sandbox.
  pipe(CHILD_FD.seccomp).end(deps.seccompFilter);
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
    alive: () => child.exitCode === null && child.signalCode === null,
    pipe,
  };
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
