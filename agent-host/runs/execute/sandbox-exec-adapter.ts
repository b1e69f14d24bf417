import { domainError } from "../../../shared/errors/domain-errors.ts";
import { WorkcellError } from "../../../shared/errors/workcell-error.ts";
import type { SandboxHandle } from "../../sandbox/sandbox-handle.ts";
import type { SandboxExec } from "../agent/index.ts";
import type { RunSandboxes } from "./run-sandboxes.ts";

/**
 * The agent's SandboxExec over the execution tree's sandbox generation. Every call is
 * fenced by the handle's generation in the manager: once the generation is over
 * (destroyed, replaced, its container died) the call throws `stale_generation`, which
 * ends the run instead of letting the model retry against a sandbox that is gone.
 *
 * The command runs through `shell` (the Runtime Assets' bash, or the image's /bin/sh)
 * as the sandbox user; aborting `signal` kills it and everything it started inside the sandbox.
 */
/**
 * How a command line runs: through a shell in the sandbox (argv before the command), or
 * not at all because that shell's Runtime Asset is not ready. Then each call is refused
 * with the reason, which the model sees; nothing falls back to another binary.
 */
export type SandboxShell =
  | { readonly ok: true; readonly argv: readonly string[] }
  | { readonly ok: false; readonly reason: string };

/** The shell of a sandbox (its tier decides: agent-host.ts). */
export type ShellFor = (handle: SandboxHandle) => SandboxShell | Promise<SandboxShell>;

/** Without Runtime Assets configured: the image's own POSIX shell (the busybox test image). */
export const IMAGE_SHELL: SandboxShell = { ok: true, argv: ["/bin/sh", "-c"] };

/**
 * A run's network (agent-host/egress/run-egress.ts): its variables on every exec, and the
 * relay's prelude run by the same shell before the command. Absent: today's exec exactly.
 */
export type ExecEgress = {
  readonly env: Readonly<Record<string, string>>;
  readonly prelude: string;
};

export function createSandboxExec(
  sandboxes: RunSandboxes,
  handle: SandboxHandle,
  shellOrPending: SandboxShell | Promise<SandboxShell> = IMAGE_SHELL,
  egress?: ExecEgress,
): SandboxExec {
  return {
    async exec(command, options) {
      const shell = await shellOrPending;
      if (!shell.ok) {
        throw new WorkcellError(
          "unprocessable",
          `The bash tool is unavailable on this node: ${shell.reason}`,
        );
      }
      const out = await sandboxes.exec(
        handle,
        {
          cmd: [...shell.argv, egress === undefined ? command : egress.prelude + command],
          ...(egress === undefined ? {} : { env: egress.env }),
          cwd: options.cwd,
          timeoutMs: options.timeoutMs,
          maxOutputBytesPerStream: options.maxOutputBytes,
          ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
          ...(options.onOutput === undefined
            ? {}
            : {
                onStdout: (chunk: Buffer) => options.onOutput?.("stdout", chunk),
                onStderr: (chunk: Buffer) => options.onOutput?.("stderr", chunk),
              }),
        },
        options.signal,
      );
      if (!out.ok) {
        throw domainError("stale_generation", {
          details: { sandbox_id: handle.sandboxId, generation: handle.generation },
        });
      }
      const { status, exitCode, stdout, stderr } = out.result;
      return {
        status,
        exitCode,
        stdout: stdout.bytes.toString("utf8"),
        stderr: stderr.bytes.toString("utf8"),
        truncated: stdout.droppedBytes > 0 || stderr.droppedBytes > 0,
      };
    },
  };
}
