import type { ExecOutcome, ExecRequest, ExecResult, ExecStatus } from "../driver.ts";
import type { SandboxConfig } from "../sandbox-config.ts";
import { OutputCapture } from "./output-capture.ts";

/** The bounded parts of one exec that both tiers share: limits, output capture, result. */
export type ExecCapture = {
  /** The request's time limit, never above the configured one. */
  readonly timeoutMs: number;
  readonly stdout: OutputCapture;
  readonly stderr: OutputCapture;
  /** The outcome with the captured output and the time since the capture began. */
  finish(status: ExecStatus, exitCode: number | null): ExecOutcome;
};

/**
 * Starts the bookkeeping of one exec: a request may ask for less time or output than the
 * configuration allows, never more (the sandbox's limits are the operator's, not the
 * caller's), and each stream keeps at most its cap, counting what it dropped.
 */
export function startExecCapture(
  config: Pick<SandboxConfig, "execTimeoutMs" | "maxOutputBytesPerStream">,
  request: ExecRequest,
): ExecCapture {
  const started = performance.now();
  const capBytes = Math.min(
    request.maxOutputBytesPerStream ?? config.maxOutputBytesPerStream,
    config.maxOutputBytesPerStream,
  );
  const stdout = new OutputCapture(capBytes, request.onStdout);
  const stderr = new OutputCapture(capBytes, request.onStderr);
  return {
    timeoutMs: Math.min(request.timeoutMs ?? config.execTimeoutMs, config.execTimeoutMs),
    stdout,
    stderr,
    finish: (status, exitCode) => ({
      ok: true,
      result: {
        status,
        exitCode,
        stdout: stdout.result(),
        stderr: stderr.result(),
        durationMs: performance.now() - started,
      } satisfies ExecResult,
    }),
  };
}
