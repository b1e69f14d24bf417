import type { ChangeBatchTool } from "../../../shared/db/schema.ts";
import type { SandboxExec } from "../agent/index.ts";
import type { CommandScope, LeasedCommands } from "./leased-commands.ts";

/**
 * The agent's SandboxExec with every command under the Execution Lease and its change
 * batch: the bash tool and the shell model reach the sandbox only through this.
 */
export function leasedSandboxExec(
  inner: SandboxExec,
  commands: LeasedCommands,
  scope: CommandScope,
  tool: ChangeBatchTool,
): SandboxExec {
  return {
    async exec(command, options) {
      const { value } = await commands.run(scope, { tool, command }, options.signal, (signal) =>
        inner.exec(command, { ...options, signal }),
      );
      return value;
    },
  };
}
