import { type ChildProcess, spawn } from "node:child_process";

/** Output kept per process: enough for a failure message, bounded for a long run. */
const OUTPUT_TAIL_CHARS = 64 * 1024;
/** Between readiness probes while a service starts. */
const READY_PROBE_INTERVAL_MS = 250;
/** One readiness probe. */
const READY_PROBE_TIMEOUT_MS = 2_000;
/** After SIGTERM, how long stop() waits before SIGKILL. */
const DEFAULT_STOP_GRACE_MS = 30_000;

export type ServiceProcess = {
  readonly name: string;
  /** The process id (its own process group: a signal to -pid reaches its children). */
  readonly pid: number;
  /** The last OUTPUT_TAIL_CHARS the process printed (stdout and stderr), for diagnostics. */
  output(): string;
  /** Resolves with the exit code (or the signal's name) once the process is gone. */
  readonly exited: Promise<number | string>;
  /** Sends a signal to the process alone (`kill -9 <pid>` / `kill -TERM <pid>`). */
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it is gone. Idempotent. */
  stop(graceMs?: number): Promise<void>;
};

/**
 * Starts one service of the deployment as its own process group and resolves once
 * `readyUrl` answers anything but a connection error (or rejects, with the output, when
 * it exits first or does not answer within `readyTimeoutMs`; the process is then stopped).
 */
export async function startServiceProcess(p: {
  name: string;
  command: string;
  args: readonly string[];
  env: Record<string, string | undefined>;
  cwd: string;
  readyUrl: string;
  readyTimeoutMs: number;
}): Promise<ServiceProcess> {
  let tail = "";
  const child: ChildProcess = spawn(p.command, [...p.args], {
    cwd: p.cwd,
    env: p.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const keep = (chunk: Buffer) => {
    tail = (tail + String(chunk)).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  const exited = new Promise<number | string>((resolve) => {
    child.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown"));
    child.once("error", (error) => {
      keep(Buffer.from(`\n${p.name}: ${error.message}\n`));
      resolve("spawn-error");
    });
  });
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const pid = child.pid ?? -1;
  const send = (target: number, signal: NodeJS.Signals) => {
    if (gone || pid < 0) return;
    try {
      process.kill(target, signal);
    } catch {
      // Already gone between the check and the signal.
    }
  };
  const stop = async (graceMs = DEFAULT_STOP_GRACE_MS) => {
    send(pid, "SIGTERM");
    const timer = setTimeout(() => send(-pid, "SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
    // Whatever the service itself started (none of ours do) goes with its group.
    send(-pid, "SIGKILL");
  };
  const service: ServiceProcess = {
    name: p.name,
    pid,
    output: () => tail,
    exited,
    signal: (signal) => send(pid, signal),
    stop,
  };
  const deadline = performance.now() + p.readyTimeoutMs;
  for (;;) {
    if (gone) {
      throw new Error(`${p.name} exited while starting (${await exited}):\n${tail}`);
    }
    try {
      await fetch(p.readyUrl, { signal: AbortSignal.timeout(READY_PROBE_TIMEOUT_MS) });
      return service;
    } catch {
      if (performance.now() > deadline) {
        await stop(5_000);
        throw new Error(
          `${p.name} did not answer ${p.readyUrl} within ${p.readyTimeoutMs} ms:\n${tail}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, READY_PROBE_INTERVAL_MS));
    }
  }
}

/** Runs a command to completion; rejects with its output when it exits non-zero. */
export async function runToCompletion(p: {
  command: string;
  args: readonly string[];
  env: Record<string, string | undefined>;
  cwd: string;
  timeoutMs: number;
}): Promise<string> {
  const child = spawn(p.command, [...p.args], {
    cwd: p.cwd,
    env: p.env,
    stdio: ["ignore", "pipe", "pipe"],
    signal: AbortSignal.timeout(p.timeoutMs),
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += String(chunk);
  });
  child.stderr.on("data", (chunk) => {
    stderr += String(chunk);
  });
  const code = await new Promise<number | string>((resolve) => {
    child.once("close", (c, s) => resolve(c ?? s ?? "unknown"));
    child.once("error", (error) => {
      stderr += error.message;
      resolve("error");
    });
  });
  if (code !== 0) {
    throw new Error(`${[p.command, ...p.args].join(" ")} failed (${code}):\n${stderr}`);
  }
  return stdout;
}
