import { fstatSync, lstatSync, readFileSync, type Stats } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import type { Readable, Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import {
  SANDBOX_HOME,
  SANDBOX_RUNTIME_MOUNT,
  SANDBOX_SKILLS_MOUNT,
  SANDBOX_USER_DATA_MOUNT,
} from "../../../shared/paths/runtime-paths.ts";
import type { ExecFence, ExecOutcome, ExecRequest } from "../driver.ts";
import { startExecCapture } from "../exec-capture.ts";
import type { SandboxConfig } from "../sandbox-config.ts";
import { bwrapArgs, CHILD_FD, type SandboxSources, TRAMPOLINE_GO } from "./bwrap-args.ts";
import { encodeBwrapArgs, type Trampoline, type TrampolineChild } from "./exec-trampoline.ts";

/** Descriptors of one exec's bind sources, opened no-follow: what each mount must be. */
export type ExecMounts = Record<Exclude<keyof SandboxSources, "workdir">, FileHandle> & {
  workdir?: FileHandle;
};

export type ProcessExecDeps = {
  logger: Logger;
  config: Pick<SandboxConfig, "execTimeoutMs" | "maxOutputBytesPerStream" | "killGraceMs">;
};

export type ProcessExecTarget = {
  /** The exec's first process, started (and its cgroup join begun) by exec-trampoline.ts. */
  trampoline: Trampoline;
  sources: SandboxSources;
  mounts: ExecMounts;
  cwd: string;
  env: Array<[string, string]>;
  /** Sandbox path of the Workdir in the `workdir` file view (bound from `sources.workdir`). */
  workdirTarget?: string;
  /** The caller's fence: the go-ahead waits for it, and is not sent unless it is true. */
  fence?: ExecFence;
  /**
   * Called once the go-ahead is sent: the driver starts the next exec's trampoline there,
   * while this one's bwrap builds its sandbox (decision 0076).
   */
  afterGoAhead?: () => void;
  /**
   * Called once every mount was verified: `mounts` are no longer needed (bwrap bound
   * paths, and they were only what to compare with), so the driver closes them while
   * the command runs instead of after it (decision 0086).
   */
  afterVerified?: () => void;
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
 * Runs one exec in a fresh bubblewrap sandbox: the trampoline gets its go-ahead (and
 * bwrap's command line) only once it sits in the exec's cgroups; the command starts only
 * after every mount has been verified from the host; on timeout or abort the exec's
 * cgroup is killed (every process it started), and the result reports `timed_out` /
 * `cancelled`. The trampoline is the caller's and ends here in every case.
 */
export async function runProcessExec(
  deps: ProcessExecDeps,
  target: ProcessExecTarget,
  request: ExecRequest,
  signal: AbortSignal,
): Promise<ExecOutcome> {
  const { timeoutMs, stdout, stderr, finish } = startExecCapture(deps.config, request);
  const { trampoline, mounts } = target;
  const { child, exited, pipe } = trampoline;
  if (signal.aborted) {
    await trampolineEnded(deps, trampoline);
    return finish("cancelled", null);
  }
  child.stdout?.on("data", (chunk: Buffer) => stdout.push(chunk));
  child.stderr?.on("data", (chunk: Buffer) => stderr.push(chunk));

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
    // What each mount must be: the descriptors bwrap is about to bind (it does not depend on bwrap).
    const expected = expectedMounts(mounts, target.workdirTarget);
    const args = encodeBwrapArgs(
      bwrapArgs({
        sources: target.sources,
        cmd: request.cmd,
        cwd: target.cwd,
        env: target.env,
        ...(target.workdirTarget === undefined ? {} : { workdirTarget: target.workdirTarget }),
      }),
    );
    // The trampoline waits for this: from here on it and all it starts are the exec's.
    // The fence was in flight meanwhile (decision 0083); a "no" sends no go-ahead.
    const fenced = await stoppedOrExited(
      Promise.all([trampoline.joined, target.fence ?? true]).then(([, open]) => !open),
    );
    if (fenced === true) {
      await trampolineEnded(deps, trampoline);
      return { ok: false, reason: "fenced" };
    }
    if (stopReason === undefined && trampoline.alive()) {
      pipe(CHILD_FD.args).end(args);
      pipe(CHILD_FD.go).end(TRAMPOLINE_GO);
      if (target.afterGoAhead) setImmediate(target.afterGoAhead);
    }
    const reported = await stoppedOrExited(readChildPid(pipe(CHILD_FD.status)));
    const childPid =
      reported === undefined
        ? undefined
        : await stoppedOrExited(waitUntilBlocked(reported, stopped.signal));
    if (childPid !== undefined && stopReason === undefined) {
      const wrong = firstWrongMount(childPid, expected);
      if (wrong !== undefined) {
        await trampoline.killTree();
        throw new MountVerificationError(
          `${wrong} inside the sandbox is not the directory agent-host opened; the exec was refused before it started`,
        );
      }
      (child.stdin as Writable).end(
        request.stdin === undefined ? undefined : Buffer.from(request.stdin),
      );
      pipe(CHILD_FD.block).end("x");
      target.afterVerified?.();
    }
    const outcome = await stoppedOrExited(exited);
    if (stopReason === undefined && outcome !== undefined) {
      if (childPid === undefined) {
        // bwrap (or the trampoline) exited before it reported a sandbox: its setup
        // failed, or the trampoline was killed while it waited (stderr says what is known).
        throw new Error(
          `bubblewrap could not start the sandbox (exit ${outcome.code ?? outcome.signal}): ${stderr.result().bytes.toString("utf8").trim()}`,
        );
      }
      // The command (PID 1) exited; the kernel killed the rest of its pid namespace.
      // The sweep confirms that from the cgroup (nothing is left when the exec reports
      // its end); the empty group's rmdirs do not hold the result back (decision 0086).
      await sweepAfterExit(deps.logger, trampoline);
      await raceTimeout(trampoline.outputDone, deps.config.killGraceMs);
      return finish("exited", exitCodeOf(outcome));
    }
    await trampolineEnded(deps, trampoline);
    return finish(stopReason ?? "cancelled", null);
  } catch (error) {
    await trampolineEnded(deps, trampoline).catch(() => {});
    if ((error as NodeJS.ErrnoException).code === "ENOENT" && !child.pid) {
      throw new Error("cannot run bash: the process tier's host tools are missing");
    }
    throw error;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
    destroyStdio(child);
  }
}

/**
 * Ends an exec early: its cgroup swept, and its first process (the trampoline, or bwrap
 * after it) killed and awaited: before the go-ahead it may be in no exec cgroup yet, so
 * the sweep cannot reach it. Nothing of the exec is left when this returns (bwrap's
 * sandbox child, if any, is in the cgroup the sweep emptied, and dies with its parent).
 */
export async function trampolineEnded(
  deps: ProcessExecDeps,
  trampoline: Trampoline,
): Promise<void> {
  try {
    await sweep(deps.logger, trampoline);
  } finally {
    await endChild(trampoline.child, trampoline.exited, deps.config.killGraceMs);
  }
  // A join still in flight lands on a dead pid (ESRCH) or in a group swept above.
  await raceTimeout(trampoline.joined, deps.config.killGraceMs);
  await trampoline.killTree().catch(() => {});
  destroyStdio(trampoline.child);
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
function expectedMounts(mounts: ExecMounts, workdirTarget: string | undefined): ExpectedMount[] {
  const checks: Array<readonly [string, FileHandle | undefined]> = MOUNT_CHECKS.map(
    ([target, key]) => [target, mounts[key]] as const,
  );
  if (workdirTarget !== undefined) checks.push([workdirTarget, mounts.workdir]);
  // fstat of a descriptor agent-host holds: no path, no disk, microseconds (decision 0086).
  return checks.map(([target, handle]) => ({
    target,
    stat: handle === undefined ? undefined : fstatSync(handle.fd),
  }));
}

/**
 * Stats each mount point through the sandbox's own root (as root on the host, via
 * /proc/<pid>/root) without following a final symlink, and compares device and inode
 * with the descriptor that was bound: a bind redirected by any path trick shows up here.
 * Synchronous (decision 0086): each path is a mount point bwrap has just made (a mount
 * root is pinned in memory, and bwrap resolved the names on the way moments ago), so the
 * lstat()s are the kernel's work of microseconds, where a thread-pool round trip each cost
 * the exec a scheduling delay on a loaded host (decision 0028).
 */
function firstWrongMount(pid: number, expected: ExpectedMount[]): string | undefined {
  const found = expected.map(({ target }) => {
    try {
      return lstatSync(`/proc/${pid}/root${target}`);
    } catch {
      return undefined;
    }
  });
  return expected.find(({ stat }, i) => {
    const inside = found[i];
    return !stat || !inside || inside.dev !== stat.dev || inside.ino !== stat.ino;
  })?.target;
}

async function sweepAfterExit(logger: Logger, trampoline: Trampoline): Promise<void> {
  const { survivors, removed } = await trampoline.emptyTree();
  if (survivors > 0) logger.error({ survivors }, "exec processes survived SIGKILL");
  void removed.then(({ error }) => {
    if (error !== undefined) logger.warn({ err: error }, "an emptied exec cgroup was not removed");
  });
}

async function sweep(logger: Logger, trampoline: Trampoline): Promise<void> {
  const report = await trampoline.killTree();
  if (report.survivors > 0) logger.error(report, "exec processes survived SIGKILL");
}

async function endChild(
  child: TrampolineChild,
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

function destroyStdio(child: TrampolineChild): void {
  for (const stream of child.stdio) {
    if (stream && "destroy" in stream) stream.destroy();
  }
}
