import { z } from "zod";
import { runtimeWorkdirPath } from "../../../../shared/paths/index.ts";
import type { SandboxExecResult } from "../sandbox-exec.ts";
import type { Tool } from "../tool.ts";

export const BASH_TOOL_NAME = "bash";
export const DEFAULT_BASH_TIMEOUT_MS = 2 * 60_000;
/** The most a call may ask for; the sandbox manager clamps again to its own maximum. */
export const MAX_BASH_TIMEOUT_MS = 10 * 60_000;
/** Per stream, kept by the sandbox; the loop caps what reaches the model again. */
export const DEFAULT_BASH_MAX_OUTPUT_BYTES = 256 * 1024;

export interface BashToolOptions {
  readonly defaultTimeoutMs: number;
  readonly maxTimeoutMs: number;
  readonly maxOutputBytes: number;
}

const bashArgs = z.strictObject({
  command: z.string().min(1).describe("Shell command line, run with the Workdir as cwd."),
  timeout_ms: z
    .number()
    .int()
    .positive()
    .optional()
    .describe("Wall-clock limit in milliseconds; the process is killed past it."),
});

export type BashArgs = z.output<typeof bashArgs>;

/**
 * Runs a command in the execution tree's sandbox, cwd = the Workdir, bounded in time and
 * output. Named `bash` because that is the name models are trained to call, but the
 * command runs as `/bin/sh -c` (sandbox-exec-adapter.ts: the image may have no bash), and
 * the description tells the model so.
 */
export function createBashTool(options: Partial<BashToolOptions> = {}): Tool<BashArgs> {
  const defaultTimeoutMs = options.defaultTimeoutMs ?? DEFAULT_BASH_TIMEOUT_MS;
  const maxTimeoutMs = options.maxTimeoutMs ?? MAX_BASH_TIMEOUT_MS;
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_BASH_MAX_OUTPUT_BYTES;
  return {
    name: BASH_TOOL_NAME,
    description:
      "Run a command line with /bin/sh -c (POSIX sh; bash itself may not be installed) in your sandbox (Linux, as an unprivileged user). The working directory is your Workdir; " +
      "the whole workspace is under /home/gem/user-data, skills are read-only under /home/gem/skills. " +
      `Output is capped at ${maxOutputBytes} bytes per stream; the default timeout is ${defaultTimeoutMs} ms.`,
    parameters: bashArgs,
    async execute(args, ctx, signal) {
      const timeoutMs = Math.min(args.timeout_ms ?? defaultTimeoutMs, maxTimeoutMs);
      // Live output reaches the run's event stream while the command runs (tool.output);
      // every pending piece is appended before tool.completed, which the loop emits next.
      const live = ctx.liveOutput();
      let result: SandboxExecResult;
      try {
        result = await ctx.sandbox.exec(args.command, {
          cwd: runtimeWorkdirPath(ctx.workdirPath),
          timeoutMs,
          maxOutputBytes,
          signal,
          onOutput: (stream, chunk) => live.push(stream, chunk),
        });
      } catch (error) {
        await live.close().catch(() => {});
        throw error;
      }
      await live.close();
      // A cancelled exec is the run being cancelled, not a result for the model.
      if (result.status === "cancelled") signal.throwIfAborted();
      return {
        isError: result.status !== "exited" || result.exitCode !== 0,
        content: formatExecResult(result, timeoutMs, maxOutputBytes),
        details: { exit_code: result.exitCode, status: result.status, truncated: result.truncated },
      };
    },
  };
}

/**
 * stdout as is (so a plain command reads like a terminal, which the shell client relies
 * on), then bracketed notes for what the model must know: stderr, how it ended, truncation.
 */
export function formatExecResult(
  result: SandboxExecResult,
  timeoutMs: number,
  maxOutputBytes: number,
): string {
  const notes: string[] = [];
  if (result.stderr !== "") notes.push(`[stderr]\n${withoutFinalNewline(result.stderr)}`);
  if (result.status === "timed_out") {
    notes.push(`[timed out after ${timeoutMs} ms: the process was killed]`);
  } else if (result.status === "cancelled") {
    notes.push("[cancelled: the process was killed]");
  } else if (result.exitCode !== 0) {
    notes.push(`[exit code ${result.exitCode ?? "unknown"}]`);
  }
  if (result.truncated) {
    notes.push(
      `[output truncated: only the first ${maxOutputBytes} bytes of each stream were kept]`,
    );
  }
  if (notes.length === 0) return result.stdout === "" ? "(no output)" : result.stdout;
  const head = result.stdout === "" ? "" : `${withoutFinalNewline(result.stdout)}\n`;
  return head + notes.join("\n");
}

function withoutFinalNewline(text: string): string {
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}
