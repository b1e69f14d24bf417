/** How an exec ended; mirrors agent-host/sandbox's ExecStatus. */
export type SandboxExecStatus = "exited" | "timed_out" | "cancelled";

export interface SandboxExecOptions {
  /** Absolute path inside the sandbox, e.g. /home/gem/user-data/projects/<uuid>. */
  readonly cwd: string;
  /** Wall-clock limit; the sandbox kills the process (and what it started) past it. */
  readonly timeoutMs: number;
  /** Bytes kept per stream (stdout, stderr); the rest is dropped and `truncated` set. */
  readonly maxOutputBytes: number;
  /** Written to the process's stdin, which is then closed; empty stdin without it. */
  readonly stdin?: string;
  /** Aborting kills the process in the sandbox; the result then says `cancelled`. */
  readonly signal: AbortSignal;
  /** Streaming: each chunk of output (under the per-stream cap) as the process writes it. */
  readonly onOutput?: (stream: "stdout" | "stderr", chunk: Buffer) => void;
}

export interface SandboxExecResult {
  readonly status: SandboxExecStatus;
  /** null when the process was killed (timeout or cancel). */
  readonly exitCode: number | null;
  /** Decoded as UTF-8 (invalid bytes become U+FFFD). */
  readonly stdout: string;
  readonly stderr: string;
  /** True when either stream had more than `maxOutputBytes`. */
  readonly truncated: boolean;
}

/**
 * The seam to the sandbox of the run's execution tree. The worker implements it over
 * SandboxManager.exec with the run's handle (generation-fenced), running `command` as a
 * shell command line (`["/bin/sh", "-c", command]`, or bash where the image has it) as
 * the sandbox user.
 *
 * A generation that is over (sandbox destroyed, replaced) must be thrown as the
 * `stale_generation` domain error: tool-failure.ts treats it as fatal for the run instead
 * of letting the model retry against a sandbox that is gone.
 */
export interface SandboxExec {
  exec(command: string, options: SandboxExecOptions): Promise<SandboxExecResult>;
}
