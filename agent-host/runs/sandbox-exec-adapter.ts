import { domainError } from "../../shared/errors/domain-errors.ts";
import type { SandboxHandle } from "../sandbox/sandbox-handle.ts";
import type { SandboxExec } from "./agent/index.ts";
import type { RunSandboxes } from "./run-sandboxes.ts";

/**
 * The agent's SandboxExec over the execution tree's sandbox generation. Every call is
 * fenced by the handle's generation in the manager: once the generation is over
 * (destroyed, replaced, its container died) the call throws `stale_generation`, which
 * ends the run instead of letting the model retry against a sandbox that is gone.
 *
 * The command runs as `/bin/sh -c` (the sandbox image may have no bash) as the sandbox
 * user; aborting `signal` kills it and everything it started inside the sandbox.
 */
export function createSandboxExec(sandboxes: RunSandboxes, handle: SandboxHandle): SandboxExec {
  return {
    async exec(command, options) {
      const out = await sandboxes.exec(
        handle,
        {
          cmd: ["/bin/sh", "-c", command],
          cwd: options.cwd,
          timeoutMs: options.timeoutMs,
          maxOutputBytesPerStream: options.maxOutputBytes,
          ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
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
