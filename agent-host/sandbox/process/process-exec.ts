import type { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { domainError } from "../../../shared/errors/domain-errors.ts";
import { isWorkcellError } from "../../../shared/errors/workcell-error.ts";
import type { ExecFence, ExecOutcome, ExecRequest } from "../driver.ts";
import { startExecCapture } from "../instance/exec-capture.ts";
import type { SandboxConfig } from "../sandbox-config.ts";
import { CHILD_FD } from "./bwrap-args.ts";
import { encodeExecSpec } from "./exec-spec.ts";
import type { Trampoline, TrampolineChild } from "./exec-trampoline.ts";
import {
  MountVerificationError,
  mountsAsVerified,
  type PrebuiltSandbox,
  stillBlocked,
} from "./prebuilt-sandbox.ts";

export type ProcessExecDeps = {
  logger: Logger;
  config: Pick<SandboxConfig, "execTimeoutMs" | "maxOutputBytesPerStream" | "killGraceMs">;
};

export type ProcessExecTarget = {
  /** The generation's sandbox, built and verified, blocked on its block fd (prebuilt-sandbox.ts). */
  sandbox: PrebuiltSandbox;
  /** Absolute sandbox path of the cwd (the Workdir unless the exec asks otherwise). */
  cwd: string;
  /** The exec's own variables, already validated. */
  env: Array<[string, string]>;
  /** The caller's fence: the release waits for it, and does not happen unless it is true. */
  fence?: ExecFence;
};

/**
 * Runs one exec in a pre-built bubblewrap sandbox (decision 0088): once the caller's fence
 * said yes, the exec's spec (cwd, environment, argv) goes to the exec shim's fd and its
 * stdin to the sandbox, and only then is `--block-fd` released, so the command starts
 * after every check; on timeout or abort the exec's cgroup is killed (every process it
 * started), and the result reports `timed_out` / `cancelled`. The sandbox is the
 * caller's and ends here in every case.
 */
export async function runProcessExec(
  deps: ProcessExecDeps,
  target: ProcessExecTarget,
  request: ExecRequest,
  signal: AbortSignal,
): Promise<ExecOutcome> {
  const { timeoutMs, stdout, stderr, finish } = startExecCapture(deps.config, request);
  const { trampoline, sandboxPid } = target.sandbox;
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
  // abort never fires.
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

  // Set once the command got its go-ahead: an error before it means nothing of it ran.
  let released = false;
  try {
    const spec = encodeExecSpec({ cmd: request.cmd, cwd: target.cwd, env: target.env });
    // The fence was in flight meanwhile (decision 0083); a "no" releases nothing.
    const fenced = await stoppedOrExited(
      Promise.resolve(target.fence ?? true).then((open) => !open),
    );
    if (fenced === true) {
      await trampolineEnded(deps, trampoline);
      return { ok: false, reason: "fenced" };
    }
    if (stopReason === undefined && trampoline.alive() && stillBlocked(sandboxPid)) {
      // Every verified mount still in place, immediately before the command may start.
      if (!mountsAsVerified(target.sandbox)) {
        throw new MountVerificationError(
          "a mount of the sandbox changed while it waited for its exec; the exec was refused before it started",
        );
      }
      pipe(CHILD_FD.spec).end(spec);
      (child.stdin as Writable).end(
        request.stdin === undefined ? undefined : Buffer.from(request.stdin),
      );
      pipe(CHILD_FD.block).end("x");
      released = true;
    }
    if (!released && stopReason === undefined) {
      // Killed while it waited (kill -9, the OOM killer, another process's destroy), or
      // bubblewrap never got the sandbox up (its state dir unreachable): the command was
      // never released, so the error says nothing ran (issue 38), not "may have run".
      const outcome = await exited;
      throw new Error(
        `bubblewrap could not start the sandbox (exit ${outcome.code ?? outcome.signal}): ${stderr.result().bytes.toString("utf8").trim()}`,
      );
    }
    const outcome = await stoppedOrExited(exited);
    if (stopReason === undefined && outcome !== undefined) {
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
    throw released ? error : sandboxStartFailed(error, deps.logger);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
    destroyStdio(child);
  }
}

/**
 * An error from before a command's go-ahead (the sandbox never started: bubblewrap failed,
 * its state dir unreachable, a mount refused): nothing of the command ran, and the error
 * says so (issue 38) instead of "the command may have completed". Its cause, which can
 * name host paths, goes to the log only. A Workcell error already says what it knows.
 */
export function sandboxStartFailed(error: unknown, logger: Logger): unknown {
  if (isWorkcellError(error)) return error;
  logger.error({ err: error }, "the process sandbox could not be started; the command was not run");
  return domainError("sandbox_start_failed", {
    message:
      "bubblewrap could not start the sandbox, so nothing of the command ran: retry the run; if it persists, ask an operator (the agent-host log has the cause).",
    details: { command_ran: "no" },
    cause: error,
  });
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
