import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, type Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { lstat, writeFile } from "node:fs/promises";
import type { Readable, Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import {
  SANDBOX_HOME,
  SANDBOX_RUNTIME_MOUNT,
  SANDBOX_SKILLS_MOUNT,
  SANDBOX_USER_DATA_MOUNT,
} from "../../../shared/paths/runtime-paths.ts";
import type { ExecOutcome, ExecRequest } from "../driver.ts";
import { startExecCapture } from "../exec-capture.ts";
import type { SandboxConfig } from "../sandbox-config.ts";
import {
  bwrapArgs,
  CHILD_FD,
  type SandboxSources,
  TRAMPOLINE_GO,
  TRAMPOLINE_SCRIPT,
} from "./bwrap-args.ts";

/** Descriptors of one exec's bind sources, opened no-follow: what each mount must be. */
export type ExecMounts = Record<Exclude<keyof SandboxSources, "workdir">, FileHandle> & {
  workdir?: FileHandle;
};

export type ProcessExecDeps = {
  logger: Logger;
  config: Pick<SandboxConfig, "execTimeoutMs" | "maxOutputBytesPerStream" | "killGraceMs">;
  tools: { sh: string; bwrap: string };
  seccompFilter: Buffer;
};

export type ProcessExecTarget = {
  sources: SandboxSources;
  mounts: ExecMounts;
  /** The generation's user namespace and the host uid owning it (sandbox-userns.ts). */
  userns: { handle: FileHandle; owner: number };
  /** cgroup.procs files agent-host puts the trampoline in before it may become bwrap. */
  cgroupProcs: string[];
  /** Kills everything in the exec's cgroup (its whole process tree) and removes the group. */
  killTree(): Promise<{ survivors: number }>;
  cwd: string;
  env: Array<[string, string]>;
  /** Sandbox path of the Workdir in the `workdir` file view (bound from `sources.workdir`). */
  workdirTarget?: string;
};

/** The mount points checked before the command runs, with the descriptor each must be. */
const MOUNT_CHECKS = [
  [SANDBOX_USER_DATA_MOUNT, "workspace"],
  [SANDBOX_SKILLS_MOUNT, "skills"],
  [SANDBOX_RUNTIME_MOUNT, "runtime"],
  ["/tmp", "tmp"],
  [SANDBOX_HOME, "home"],
] as const;

/** A bind that did not land on the directory agent-host opened: the exec is refused. */
export class MountVerificationError extends Error {
  override readonly name = "MountVerificationError";
}

/**
 * Runs one exec in a fresh bubblewrap sandbox: the command starts only after every
 * mount has been verified from the host; on timeout or abort the exec's cgroup is
 * killed (every process it started), and the result reports `timed_out` / `cancelled`.
 */
export async function runProcessExec(
  deps: ProcessExecDeps,
  target: ProcessExecTarget,
  request: ExecRequest,
  signal: AbortSignal,
): Promise<ExecOutcome> {
  const { timeoutMs, stdout, stderr, finish } = startExecCapture(deps.config, request);
  if (signal.aborted) return finish("cancelled", null);

  const { mounts } = target;
  const hasStdin = request.stdin !== undefined;
  const child = spawn(
    deps.tools.sh,
    [
      "-c",
      TRAMPOLINE_SCRIPT,
      "sh",
      deps.tools.bwrap,
      ...bwrapArgs({
        sources: target.sources,
        cmd: request.cmd,
        cwd: target.cwd,
        env: target.env,
        ...(target.workdirTarget === undefined ? {} : { workdirTarget: target.workdirTarget }),
      }),
    ],
    {
      // Order is CHILD_FD's: 3 seccomp, 4 status, 5 block, 6 the user namespace, 7 go.
      stdio: [
        hasStdin ? "pipe" : "ignore",
        "pipe",
        "pipe",
        "pipe",
        "pipe",
        "pipe",
        target.userns.handle.fd,
        "pipe",
      ],
      env: {},
      // The namespace's owner, no supplementary group (TRAMPOLINE_SCRIPT says why).
      uid: target.userns.owner,
      gid: target.userns.owner,
    },
  );
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolve, reject) => {
      child.once("error", reject);
      child.once("exit", (code, sig) => resolve({ code, signal: sig }));
    },
  );
  exited.catch(() => {});
  // Output is complete when both streams closed (after exit, once the kernel has killed
  // what the command left behind).
  const outputDone = Promise.all(
    [child.stdout, child.stderr].map(
      (s) => new Promise<void>((resolve) => (s ? s.once("close", () => resolve()) : resolve())),
    ),
  );
  child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
  child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));
  const pipe = (i: number) => child.stdio[i] as Readable & Writable;
  // What each mount must be, read while bwrap sets up (it does not depend on bwrap).
  const expected = expectedMounts(mounts, target.workdirTarget);
  expected.catch(() => {});
  pipe(3).end(deps.seccompFilter);
  pipe(3).on("error", () => {});
  pipe(5).on("error", () => {});
  pipe(CHILD_FD.go).on("error", () => {});

  let stopReason: "timed_out" | "cancelled" | undefined;
  const stopped = new AbortController();
  const timer = setTimeout(() => {
    stopReason ??= "timed_out";
    stopped.abort();
  }, timeoutMs);
  const onAbort = () => {
    stopReason ??= "cancelled";
    stopped.abort();
  };
  signal.addEventListener("abort", onAbort, { once: true });
  // Resolves at once when the exec was already stopped: an abort listener added after the
  // abort never fires, and before the go-ahead nothing else would end the wait.
  const stoppedOrExited = <T>(promise: Promise<T>) =>
    stopped.signal.aborted
      ? Promise.resolve(undefined)
      : Promise.race([
          promise,
          exited.then(() => undefined),
          new Promise<undefined>((resolve) =>
            stopped.signal.addEventListener("abort", () => resolve(undefined), { once: true }),
          ),
        ]);

  try {
    if (child.pid !== undefined) {
      // The trampoline waits for this: from here on it and all it starts are the exec's.
      const pid = String(child.pid);
      const joined = Promise.all(target.cgroupProcs.map((file) => writeFile(file, pid)));
      joined.catch(() => {});
      await stoppedOrExited(joined);
      if (stopReason === undefined) pipe(CHILD_FD.go).end(TRAMPOLINE_GO);
    }
    const reported = await stoppedOrExited(readChildPid(pipe(4)));
    const childPid =
      reported === undefined
        ? undefined
        : await stoppedOrExited(waitUntilBlocked(reported, stopped.signal));
    if (childPid !== undefined && stopReason === undefined) {
      const wrong = await firstWrongMount(childPid, await expected);
      if (wrong !== undefined) {
        await target.killTree();
        throw new MountVerificationError(
          `${wrong} inside the sandbox is not the directory agent-host opened; the exec was refused before it started`,
        );
      }
      if (hasStdin)
        (child.stdin as Writable).end(Buffer.from(request.stdin as string | Uint8Array));
      pipe(5).end("x");
    }
    const outcome = await stoppedOrExited(exited);
    if (stopReason === undefined && outcome !== undefined) {
      if (childPid === undefined) {
        // bwrap exited before it reported a sandbox: its setup failed (stderr says why).
        throw new Error(
          `bubblewrap could not start the sandbox (exit ${outcome.code ?? outcome.signal}): ${stderr.result().bytes.toString("utf8").trim()}`,
        );
      }
      // The command (PID 1) exited; the kernel killed the rest of its pid namespace.
      // The sweep confirms that from the cgroup and removes it.
      await sweep(deps.logger, target);
      await raceTimeout(outputDone, deps.config.killGraceMs);
      return finish("exited", exitCodeOf(outcome));
    }
    await sweep(deps.logger, target);
    await endChild(child, exited, deps.config.killGraceMs);
    return finish(stopReason ?? "cancelled", null);
  } catch (error) {
    await sweep(deps.logger, target).catch(() => {});
    await endChild(child, exited, deps.config.killGraceMs);
    if ((error as NodeJS.ErrnoException).code === "ENOENT" && !child.pid) {
      throw new Error(`cannot run ${deps.tools.sh}: the process tier's host tools are missing`);
    }
    throw error;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
    destroyStdio(child);
  }
}

/** bwrap's first JSON status document names the sandbox's first process (a host pid). */
function readChildPid(status: Readable): Promise<number | undefined> {
  return new Promise((resolve) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      const match = /"child-pid"\s*:\s*(\d+)/.exec(text);
      if (match) {
        status.off("data", onData);
        resolve(Number(match[1]));
      }
    };
    status.on("data", onData);
    status.once("end", () => resolve(undefined));
    status.once("error", () => resolve(undefined));
  });
}

/** How often the setup's progress is looked at (it takes a few milliseconds). */
const SETUP_POLL_MS = 1;

/**
 * bwrap reports the pid right after clone, before the child has built its mounts. The
 * child is done with them when it sits in `read(<block fd>, …, 1)`, waiting for our
 * go-ahead: /proc/<pid>/syscall shows exactly that (number 0 = read on x86_64; the
 * first argument is the fd). Returns the pid then, undefined if it died first.
 */
async function waitUntilBlocked(pid: number, stop: AbortSignal): Promise<number | undefined> {
  const blocked = new RegExp(
    `^${READ_SYSCALL[process.arch] ?? 0} 0x${CHILD_FD.block.toString(16)} `,
  );
  while (!stop.aborted) {
    // Read synchronously: a procfs file the kernel fills in microseconds, never disk I/O.
    // A thread-pool round trip per poll cost a scheduling delay each (decision 0028).
    const text = readProcFile(`/proc/${pid}/syscall`);
    if (text === undefined) return undefined;
    if (blocked.test(text)) return pid;
    await sleep(SETUP_POLL_MS);
  }
  return undefined;
}

function readProcFile(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

const READ_SYSCALL: Partial<Record<NodeJS.Architecture, number>> = { x64: 0, arm64: 63 };

type ExpectedMount = { target: string; stat: Stats | undefined };

/** Device and inode of every descriptor that was bound, with its mount point. */
async function expectedMounts(
  mounts: ExecMounts,
  workdirTarget: string | undefined,
): Promise<ExpectedMount[]> {
  const checks: Array<readonly [string, FileHandle | undefined]> = MOUNT_CHECKS.map(
    ([target, key]) => [target, mounts[key]] as const,
  );
  if (workdirTarget !== undefined) checks.push([workdirTarget, mounts.workdir]);
  return Promise.all(
    checks.map(async ([target, handle]) => ({ target, stat: await handle?.stat() })),
  );
}

/**
 * Stats each mount point through the sandbox's own root (as root on the host, via
 * /proc/<pid>/root) without following a final symlink, and compares device and inode
 * with the descriptor that was bound: a bind redirected by any path trick shows up here.
 * All at once: independent lstat()s (decision 0028).
 */
async function firstWrongMount(
  pid: number,
  expected: ExpectedMount[],
): Promise<string | undefined> {
  const found = await Promise.all(
    expected.map(({ target }) => lstat(`/proc/${pid}/root${target}`).catch(() => undefined)),
  );
  return expected.find(({ stat }, i) => {
    const inside = found[i];
    return !stat || !inside || inside.dev !== stat.dev || inside.ino !== stat.ino;
  })?.target;
}

async function sweep(logger: Logger, target: ProcessExecTarget): Promise<void> {
  const report = await target.killTree();
  if (report.survivors > 0) logger.error(report, "exec processes survived SIGKILL");
}

/**
 * The exec's own first process (the trampoline, or bwrap after it) when the exec ends
 * early: before the go-ahead it is in no exec cgroup, so the sweep cannot reach it. Killed
 * and awaited, so nothing of the exec is left when the exec returns (bwrap's sandbox
 * child, if any, is in the cgroup the sweep emptied, and dies with its parent anyway).
 */
async function endChild(
  child: ChildProcess,
  exited: Promise<unknown>,
  graceMs: number,
): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await raceTimeout(exited, graceMs);
}

function exitCodeOf(outcome: { code: number | null; signal: NodeJS.Signals | null }): number {
  if (outcome.code !== null) return outcome.code;
  return 128 + (outcome.signal === "SIGKILL" ? 9 : 15);
}

async function raceTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  const timer = new AbortController();
  await Promise.race([
    promise.catch(() => {}),
    sleep(ms, undefined, { signal: timer.signal }).catch(() => {}),
  ]);
  timer.abort();
}

function destroyStdio(child: ChildProcess): void {
  for (const stream of child.stdio) {
    if (stream && "destroy" in stream) stream.destroy();
  }
}
