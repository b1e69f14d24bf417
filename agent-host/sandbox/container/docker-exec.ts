import { readlinkSync } from "node:fs";
import type { Duplex, Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import type Docker from "dockerode";
import type { Logger } from "pino";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import type { ExecFence, ExecOutcome, ExecRequest, InstanceRef } from "../driver.ts";
import { startExecCapture } from "../instance/exec-capture.ts";
import { execEnvEntries } from "../instance/exec-env.ts";
import type { SandboxConfig } from "../sandbox-config.ts";
import { SANDBOX_USER } from "./container-spec.ts";
import {
  boundedDockerCall,
  type CommandRan,
  dockerUnreachable,
  dockerUnresponsive,
  isConnectionError,
} from "./docker-call.ts";
import { isGoneError } from "./docker-errors.ts";
import { killExecLeftovers } from "./exec-leftovers.ts";
import { type FreezeHolds, stopExecFrozen } from "./frozen-stop.ts";
import { killExecProcesses } from "./kill-exec-processes.ts";
import { createDemuxer, STDERR_STREAM, STDOUT_STREAM } from "./stream-demuxer.ts";

/** A container's init as a host pid, and the pid namespace it and its execs live in. */
export type ContainerPids = { initPid: number; pidNamespace: string };

/** How long to wait for Docker to report an exit code once the stream has closed. */
const EXIT_CODE_WAIT_MS = 2_000;
const EXIT_CODE_POLL_MS = 5;

export type DockerExecDeps = {
  docker: Docker;
  logger: Logger;
  /**
   * The driver's memo of each container's init (host pid) and pid namespace, for the
   * sweep after every exec (exec-leftovers.ts): one container inspect per sandbox, not
   * per exec. Absent: inspected each time.
   */
  containerPids?: Map<string, ContainerPids>;
  /** The driver's count of stops holding each container frozen (frozen-stop.ts). */
  freezeHolds?: FreezeHolds;
  config: Pick<
    SandboxConfig,
    | "execTimeoutMs"
    | "maxOutputBytesPerStream"
    | "killGraceMs"
    | "cancelWaitMs"
    | "dockerCallTimeoutMs"
  >;
};

/**
 * Runs one exec in a sandbox container: streams demuxed, capped stdout/stderr, feeds
 * stdin, and on timeout or abort kills the process (and what it started) from the host
 * before reporting `timed_out` / `cancelled`.
 */
export async function runDockerExec(
  deps: DockerExecDeps,
  ref: InstanceRef,
  request: ExecRequest,
  signal: AbortSignal,
  fence?: ExecFence,
): Promise<ExecOutcome> {
  const capture = startExecCapture(deps.config, request);
  const { stdout, stderr, finish } = capture;
  if (signal.aborted) return finish("cancelled", null);

  const hasStdin = request.stdin !== undefined;
  const container = deps.docker.getContainer(ref.instanceId);
  const timeoutMs = deps.config.dockerCallTimeoutMs;
  const argv = execWrapper(request.cmd, request.env);
  let exec: Docker.Exec;
  try {
    exec = await boundedDockerCall(
      { timeoutMs, purpose: "to create the exec", commandRan: "no" },
      signal,
      (bounded) =>
        container.exec({
          Cmd: argv,
          Env: envList(request.env),
          User: SANDBOX_USER,
          ...(request.cwd === undefined ? {} : { WorkingDir: request.cwd }),
          AttachStdin: hasStdin,
          AttachStdout: true,
          AttachStderr: true,
          Tty: false,
          abortSignal: bounded,
        }),
    );
  } catch (error) {
    if (signal.aborted && (error as Error).name === "AbortError") return finish("cancelled", null);
    if (isGoneError(error)) return { ok: false, reason: "sandbox_gone" };
    throw error;
  }
  // The exec was only created (Docker runs nothing before its start) while the fence's
  // round trip was in flight; it starts only on the fence's yes (decisions 0083, 0193). An
  // exec never started stays in Docker until its container is removed, which a fenced
  // generation is.
  if (fence && !(await fence)) return { ok: false, reason: "fenced" };
  let stream: Duplex | Readable;
  try {
    stream = await startExec(deps, ref, exec, hasStdin);
  } catch (error) {
    if (isGoneError(error)) return { ok: false, reason: "sandbox_gone" };
    throw error;
  }

  const feed = createDemuxer((id, payload) => {
    if (id === STDOUT_STREAM) stdout.push(payload);
    else if (id === STDERR_STREAM) stderr.push(payload);
  });
  stream.on("data", (chunk: Buffer) => feed(chunk));
  const closed = new Promise<void>((resolve) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
    // A broken connection ends the exec as far as we can observe it; the exit code
    // lookup below decides what happened to the process.
    stream.once("error", () => resolve());
  });
  if (hasStdin) (stream as Duplex).end(Buffer.from(request.stdin as string | Uint8Array));

  // Whichever comes first: the stream closing, the wall clock, or the caller's abort.
  let stopReason: "timed_out" | "cancelled" | undefined;
  const stopped = new AbortController();
  const timer = setTimeout(() => {
    stopReason ??= "timed_out";
    stopped.abort();
  }, capture.timeoutMs);
  const onAbort = () => {
    stopReason ??= "cancelled";
    stopped.abort();
  };
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    await Promise.race([
      closed,
      new Promise((resolve) => stopped.signal.addEventListener("abort", resolve, { once: true })),
    ]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }

  try {
    if (stopReason === undefined) {
      const exitCode = await exitCodeOf(deps, exec);
      // Nothing the command started outlives it (decision 0106): before its result, so
      // no later write of a leftover can land in another run's changes or in none.
      await endLeftovers(deps, ref);
      return finish("exited", exitCode);
    }
    if (stopReason === "cancelled") {
      const stopping = stopExec(deps, ref, exec, [argv, request.cmd]);
      return await cancelExec(deps, ref, exec, stopping, stream, closed, () =>
        finish("cancelled", null),
      );
    }
    try {
      await stopExec(deps, ref, exec, [argv, request.cmd]);
      // The kill closes the process's pipes, so the stream ends; if something still
      // holds them, stop waiting after the grace.
      await raceTimeout(closed, deps.config.killGraceMs);
    } finally {
      stream.destroy();
    }
    return finish(stopReason, null);
  } catch (error) {
    // The container went away under the exec (destroyed, or its keep-alive died).
    if (isGoneError(error)) return { ok: false, reason: "sandbox_gone" };
    throw error;
  }
}

/**
 * A cancelled exec: its process is killed and the stream closed as for a timeout, but
 * the caller (a run being stopped) waits for the kill at most cancelWaitMs (500 ms, not
 * killGraceMs: issue 14, a cancel takes effect within a second; docs/decisions/0079).
 * With the engine hung, the kill's inspect would otherwise hold the cancel for a whole
 * Docker call bound (stopping a run never waits on a hung call); the kill goes on in the
 * background, bounded, and a failure is logged. A kill that fails at once (the container
 * is gone) still reports as before.
 */
async function cancelExec(
  deps: DockerExecDeps,
  ref: InstanceRef,
  exec: Docker.Exec,
  killing: Promise<void>,
  stream: Duplex | Readable,
  closed: Promise<void>,
  cancelled: () => ExecOutcome,
): Promise<ExecOutcome> {
  const late = new AbortController();
  const outcome = await Promise.race([
    killing.then(
      () => "killed" as const,
      (error: unknown) => ({ error }),
    ),
    sleep(deps.config.cancelWaitMs, "late" as const, { signal: late.signal }).catch(
      () => "late" as const,
    ),
  ]);
  late.abort();
  if (outcome === "late") {
    void killing
      .catch((error: unknown) => {
        deps.logger.warn(
          { err: error, container_id: ref.instanceId, exec_id: exec.id },
          "could not kill a cancelled exec",
        );
      })
      .finally(() => stream.destroy());
    return cancelled();
  }
  try {
    if (outcome !== "killed") throw outcome.error;
    // As after a timeout: the kill closes the process's pipes, so the stream ends.
    await raceTimeout(closed, deps.config.killGraceMs);
  } finally {
    stream.destroy();
  }
  return cancelled();
}

/** Waits for `promise` at most `ms`, without leaving a timer behind. */
async function raceTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  const timer = new AbortController();
  await Promise.race([promise, sleep(ms, undefined, { signal: timer.signal }).catch(() => {})]);
  timer.abort();
}

/**
 * Starts the exec and returns its attached stream. The caller's signal is not passed:
 * aborting the request would only close our end of the stream and leave the process
 * running (cancellation is the kill after the stream). Only our own deadline may abort
 * it, and only while the start is unanswered: the request's signal stays bound to the
 * stream for its whole life, so a later abort would cut a running command's output.
 * Unanswered, the command may have started; it is killed if Docker still lets us.
 */
async function startExec(
  deps: DockerExecDeps,
  ref: InstanceRef,
  exec: Docker.Exec,
  hasStdin: boolean,
): Promise<Duplex | Readable> {
  const timeoutMs = deps.config.dockerCallTimeoutMs;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  try {
    return (await exec.start({
      hijack: hasStdin,
      stdin: hasStdin,
      abortSignal: deadline.signal,
    })) as Duplex | Readable;
  } catch (error) {
    if (!deadline.signal.aborted) {
      // The socket broke with the start in flight: the command may have started.
      if (isConnectionError(error)) {
        throw dockerUnreachable(
          { timeoutMs, purpose: "to start the command", commandRan: "maybe" },
          error,
        );
      }
      throw error;
    }
    await killExec(deps, ref, exec, "maybe").catch((killError: unknown) => {
      deps.logger.warn(
        { err: killError, container_id: ref.instanceId, exec_id: exec.id },
        "could not kill an exec whose start did not answer",
      );
    });
    throw dockerUnresponsive(
      { timeoutMs, purpose: "to start the command", commandRan: "maybe" },
      error,
    );
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A started command's stop: at once on the host, the container frozen (frozen-stop.ts),
 * then through Docker as before, which confirms the kill and sweeps what is left (or
 * reports that Docker does not answer, the command stopped all the same).
 */
async function stopExec(
  deps: DockerExecDeps,
  ref: InstanceRef,
  exec: Docker.Exec,
  argvs: readonly (readonly string[])[],
): Promise<void> {
  const log = deps.logger.child({ container_id: ref.instanceId, exec_id: exec.id });
  const initPid = deps.containerPids?.get(ref.instanceId)?.initPid;
  // Asked for at the stop, not as the command starts: inspecting an exec while Docker was
  // still starting it held its pid back for seconds here. Asked once the container is
  // frozen, so neither the request nor Docker's latency is the writer's (frozen-stop.ts).
  let pidNow: Promise<number | "starting" | undefined> | undefined;
  const askPid = () => {
    if (pidNow === undefined) {
      pidNow = execPidNow(deps, exec);
      pidNow.catch(() => {}); // awaited by the stop; a failure is its "unknown"
    }
    return pidNow;
  };
  const container = {
    instanceId: ref.instanceId,
    initPid,
    argvs,
    ...(deps.freezeHolds ? { holds: deps.freezeHolds } : {}),
  };
  let frozen = await stopExecFrozen(log, container, askPid);
  if (frozen === "not_started" && (await askPid()) === "starting") {
    // Docker 20.10 reports a running exec with no pid until containerd has answered its
    // start: while the start is frozen with the container, and under load for a moment
    // after the command already runs, when the frozen group did not show it by its argv
    // either (exec-leader.ts). Thawed now, the start completes; once Docker names the
    // process it is stopped on the host as above, so the stop does not hang on Docker's
    // later calls either.
    const pid = await execPid(deps, exec, "yes").catch(() => undefined);
    if (pid !== undefined) frozen = await stopExecFrozen(log, container, async () => pid);
  }
  if (frozen === "commands_killed")
    log.warn("killed every command of a sandbox container: Docker did not say which was this one");
  await killExec(deps, ref, exec, "yes");
}

async function killExec(
  deps: DockerExecDeps,
  ref: InstanceRef,
  exec: Docker.Exec,
  commandRan: CommandRan,
): Promise<void> {
  const log = deps.logger.child({ container_id: ref.instanceId, exec_id: exec.id });
  const timeoutMs = deps.config.dockerCallTimeoutMs;
  const pid = await execPid(deps, exec, commandRan);
  if (pid === undefined) return; // it never started
  const info = await boundedDockerCall(
    { timeoutMs, purpose: "to stop the command", commandRan },
    new AbortController().signal,
    (bounded) => deps.docker.getContainer(ref.instanceId).inspect({ abortSignal: bounded }),
  ).catch((error: unknown) => {
    if (isGoneError(error)) return undefined; // gone with everything in it
    throw error;
  });
  if (!info) return;
  const initPid = info.State.Pid;
  const pidNamespace = initPid > 0 ? pidNamespaceNow(initPid) : "";
  if (pidNamespace === "") {
    // Fail loudly rather than report a kill that did not happen: this node cannot see
    // the container's processes (agent-host outside the host pid namespace).
    throw new WorkcellError(
      "internal",
      "Cannot kill a sandbox exec: agent-host does not see the container's processes. Run agent-host in the host pid namespace.",
    );
  }
  const report = await killExecProcesses(pid, pidNamespace);
  if (report.survivors > 0) log.error({ ...report, pid }, "exec processes survived SIGKILL");
  else log.debug({ ...report, pid }, "killed exec processes");
  await sweepLeftovers(log, { initPid, pidNamespace });
}

/**
 * After an exec exited by itself: kills what it (or an earlier exec) left running in the
 * container, unless a running exec still owns it (exec-leftovers.ts). The container gone
 * means nothing is left.
 */
async function endLeftovers(deps: DockerExecDeps, ref: InstanceRef): Promise<void> {
  const log = deps.logger.child({ container_id: ref.instanceId });
  let pids = deps.containerPids?.get(ref.instanceId);
  if (pids === undefined) {
    const info = await boundedDockerCall(
      {
        timeoutMs: deps.config.dockerCallTimeoutMs,
        purpose: "to find what the command left running",
        commandRan: "yes",
      },
      new AbortController().signal,
      (bounded) => deps.docker.getContainer(ref.instanceId).inspect({ abortSignal: bounded }),
    ).catch((error: unknown) => {
      if (isGoneError(error)) return undefined;
      throw error;
    });
    const initPid = info?.State.Pid ?? 0;
    if (initPid <= 0) return;
    // No such process: the container stopped since the inspect, with everything in it.
    // (Unseen host pids, agent-host outside the host pid namespace, fail the first
    // timeout's kill loudly: decision 0005.)
    const pidNamespace = pidNamespaceNow(initPid);
    if (pidNamespace === "") return;
    pids = { initPid, pidNamespace };
    deps.containerPids?.set(ref.instanceId, pids);
  }
  await sweepLeftovers(log, pids);
}

async function sweepLeftovers(log: Logger, pids: ContainerPids): Promise<void> {
  // The init is gone (container stopped): so is everything that was in it.
  const current = pidNamespaceNow(pids.initPid);
  if (current !== pids.pidNamespace) return;
  const report = await killExecLeftovers(pids.initPid, pids.pidNamespace);
  if (report.survivors > 0) log.error(report, "processes left by ended execs survived SIGKILL");
  else if (report.killed > 0) log.debug(report, "killed processes left by ended execs");
}

/** The pid namespace of a host process now, "" when it is gone (a procfs readlink: sync, 0028). */
function pidNamespaceNow(pid: number): string {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return "";
  }
}

/** One exec inspect, bounded: Docker may stop answering mid-exec like any other call. */
function inspectExec(
  deps: DockerExecDeps,
  exec: Docker.Exec,
  purpose: string,
  commandRan: CommandRan,
): Promise<Docker.ExecInspectInfo> {
  return boundedDockerCall(
    { timeoutMs: deps.config.dockerCallTimeoutMs, purpose, commandRan },
    new AbortController().signal,
    (bounded) => exec.inspect({ abortSignal: bounded }),
  );
}

/**
 * The exec's host pid. Docker keeps reporting it after the process has exited, which
 * matters: the exec may be gone while children it left in its session still run (and
 * hold the output stream open); the session is still identified by that pid. Undefined
 * only when the process never started. Running with no pid is a start containerd has
 * not answered yet (Docker 20.10 names the pid only then, and the command may already
 * run): that is waited for as long as one Docker call may take, not taken for "never
 * started" after the short wait for a start that was never made.
 */
async function execPid(
  deps: DockerExecDeps,
  exec: Docker.Exec,
  commandRan: CommandRan,
): Promise<number | undefined> {
  const started = performance.now();
  for (let polls = 0; ; polls++) {
    const info = await inspectExec(deps, exec, "to find the command's process", commandRan);
    if (info.Pid > 0) return info.Pid;
    if (!info.Running && info.ExitCode !== null) return undefined;
    const waitMs = info.Running ? deps.config.dockerCallTimeoutMs : EXIT_CODE_WAIT_MS;
    if (performance.now() - started > waitMs) return undefined;
    await sleep(Math.min(EXIT_CODE_POLL_MS * 2 ** Math.min(polls, 4), 50));
  }
}

/**
 * One look at the command's host pid, for a stop that froze its container: "starting"
 * while Docker runs it but has not named its process yet (its start was frozen too).
 */
async function execPidNow(
  deps: DockerExecDeps,
  exec: Docker.Exec,
): Promise<number | "starting" | undefined> {
  const info = await inspectExec(deps, exec, "to find the command's process", "yes");
  if (info.Pid > 0) return info.Pid;
  return info.Running ? "starting" : undefined;
}

/** Docker may report the stream closed a moment before it records the exit code. */
async function exitCodeOf(deps: DockerExecDeps, exec: Docker.Exec): Promise<number | null> {
  const deadline = performance.now() + EXIT_CODE_WAIT_MS;
  for (;;) {
    const info = await inspectExec(deps, exec, "with the command's exit code", "yes");
    if (!info.Running && info.ExitCode !== null) return info.ExitCode;
    if (performance.now() > deadline) return null;
    await sleep(EXIT_CODE_POLL_MS);
  }
}

function envList(env: ExecRequest["env"]): string[] {
  return execEnvEntries(env).map(([name, value]) => `${name}=${value}`);
}

/** Variables a POSIX shell exports on its own; the wrapper below removes them again. */
const SHELL_ADDED_ENV = ["PWD", "OLDPWD", "SHLVL"] as const;

/**
 * What Docker's exec cannot set, set by a shell that then `exec`s the command (same pid,
 * same argv; a missing program exits 127):
 *
 * - New files 0600 and directories 0700 (docs/architecture.md §3): Docker starts an exec with
 *   umask 022, so the shell sets 077. The process tier's trampoline sets the same umask.
 * - A command is the first thing the kernel's OOM killer takes, never the sandbox's
 *   keep-alive: an exec inherits the container's `oom_score_adj`, so without this a
 *   second OOM kill (while the first victim's memory is still being freed) could take the
 *   keep-alive and stop the whole sandbox. Raising one's own score needs no privilege; a
 *   /proc that refuses it leaves the command running with the container's score.
 *
 * The variables the shell itself exports are unset first, unless the request declared
 * them, so the command still gets exactly the declared environment. The image's own
 * /bin/sh by absolute path: a PATH lookup would find the Runtime Assets' shell first
 * (/runtime/usr/bin), which cannot run in an image without their loader (the busybox test
 * image, an operator's static image).
 */
export function execWrapper(cmd: readonly string[], env: ExecRequest["env"]): string[] {
  const added = SHELL_ADDED_ENV.filter((name) => env?.[name] === undefined);
  const unset = added.length > 0 ? `unset ${added.join(" ")}; ` : "";
  const oom = "{ echo 1000 >/proc/self/oom_score_adj; } 2>/dev/null; ";
  return ["/bin/sh", "-c", `umask 077 && ${oom}${unset}exec "$@"`, "sh", ...cmd];
}
