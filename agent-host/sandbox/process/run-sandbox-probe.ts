import { spawn } from "node:child_process";
import type { Writable } from "node:stream";

export type SandboxProbeRun = {
  /** Exit code, or null when it ended by a signal or could not start. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The probe's deadline passed (or `signal` aborted) and its process group was killed. */
  stopped: boolean;
  /** Set when the command could not be started at all. */
  error?: Error;
};

export type SandboxProbeOptions = {
  timeoutMs: number;
  signal?: AbortSignal;
  env: NodeJS.ProcessEnv;
  uid?: number;
  gid?: number;
  /** Written to the probe's fd 3 and closed (bwrap's `--seccomp 3`). */
  fd3?: Buffer;
};

/**
 * Runs a short bubblewrap probe (a new user namespace, then one command) as the leader of
 * its own process group, and on its deadline or an abort SIGKILLs the whole group.
 *
 * Why the group: bwrap 0.8's child, right after the clone, blocks in read() until its
 * parent has written the namespace's uid map, and only later arms --die-with-parent.
 * Killing just the parent (what execFile's timeout does) in that window leaves the child
 * blocked forever as an orphan on the host (seen after test runs that stopped agent-hosts
 * mid-probe: `bwrap` processes of PPID 1 in `read`). The child is still in the parent's
 * process group, so one kill of the group ends both. While the group is not reaped its
 * id cannot be reused, so the kill cannot reach anyone else.
 */
export function runSandboxProbe(
  command: string,
  args: readonly string[],
  options: SandboxProbeOptions,
): Promise<SandboxProbeRun> {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      stdio: ["ignore", "pipe", "pipe", ...(options.fd3 === undefined ? [] : ["pipe" as const])],
      env: options.env,
      detached: true,
      ...(options.uid === undefined ? {} : { uid: options.uid }),
      ...(options.gid === undefined ? {} : { gid: options.gid }),
    });
    let stdout = "";
    let stderr = "";
    let stopped = false;
    let error: Error | undefined;
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const stop = () => {
      stopped = true;
      // 'close' has not fired, so a member of the group still holds its pipes: the
      // group exists and its id is still this child's.
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // Gone meanwhile (ESRCH): nothing left to end.
        }
      }
    };
    const timer = setTimeout(stop, options.timeoutMs);
    options.signal?.addEventListener("abort", stop, { once: true });
    if (options.signal?.aborted) stop();
    if (options.fd3 !== undefined) {
      const fd3 = child.stdio[3] as Writable;
      fd3.on("error", () => {});
      fd3.end(options.fd3);
    }
    let settled = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", stop);
      resolve({ code, signal, stdout, stderr, stopped, ...(error ? { error } : {}) });
    };
    child.once("error", (e) => {
      error = e;
      // Not started at all (no pid): no 'close' may follow.
      if (child.pid === undefined) finish(null, null);
    });
    child.once("close", finish);
  });
}
