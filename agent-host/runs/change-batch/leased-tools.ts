import type { Tool } from "../agent/index.ts";
import { WRITE_FILE_TOOL_NAME } from "../agent/index.ts";
import type { CommandScope, LeasedCommands } from "./leased-commands.ts";

/**
 * The host-side tools that write into the Workdir, under the Execution Lease with a change
 * batch each, like sandbox commands: write_file cannot interleave with a command of another
 * thread on the same root, and what it wrote is one of the run's facts.
 */
export function leasedTools(
  tools: readonly Tool[],
  commands: LeasedCommands,
  scope: CommandScope,
): Tool[] {
  return tools.map((tool) => {
    if (tool.name !== WRITE_FILE_TOOL_NAME) return tool;
    return {
      ...tool,
      async execute(args, ctx, signal) {
        const path = (args as { path?: unknown }).path;
        const command = `write_file ${typeof path === "string" ? path : ""}`;
        const { value } = await commands.run(scope, { tool: "write_file", command }, signal, (s) =>
          tool.execute(args, ctx, s),
        );
        return value;
      },
    };
  });
}
