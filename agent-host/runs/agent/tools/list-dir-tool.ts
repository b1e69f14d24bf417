import { z } from "zod";
import { resolveRuntimePath } from "../runtime-path.ts";
import type { Tool } from "../tool.ts";
import { refusingOnWorkspaceError } from "./file-tool-refusal.ts";

export const LIST_DIR_TOOL_NAME = "list_dir";
export const DEFAULT_LIST_DIR_MAX_ENTRIES = 1000;

export interface ListDirToolOptions {
  readonly maxEntries: number;
}

const listDirArgs = z.strictObject({
  path: z
    .string()
    .min(1)
    .default(".")
    .describe(
      "Directory: relative to the Workdir (default: the Workdir), or absolute under /home/gem/user-data.",
    ),
});

export type ListDirArgs = z.output<typeof listDirArgs>;

/** Lists one directory: regular files and real directories only (the layer hides the rest). */
export function createListDirTool(options: Partial<ListDirToolOptions> = {}): Tool<ListDirArgs> {
  const maxEntries = options.maxEntries ?? DEFAULT_LIST_DIR_MAX_ENTRIES;
  return {
    name: LIST_DIR_TOOL_NAME,
    description:
      "List a directory of your workspace: files with their size, directories with a trailing '/'. " +
      `At most ${maxEntries} entries; symbolic links and special files are not shown.`,
    parameters: listDirArgs,
    async execute(args, ctx, signal) {
      const resolved = resolveRuntimePath(args.path, ctx.workdirPath, "read");
      if (!resolved.ok) return resolved.refusal;
      const { workspacePath, runtimePath } = resolved;
      return refusingOnWorkspaceError(runtimePath, signal, async () => {
        const { items, truncated } = await ctx.workspace.list(workspacePath, {
          maxEntries,
          signal,
        });
        const lines = items.map((item) =>
          item.type === "dir" ? `${item.name}/` : `${item.name}  (${item.size} bytes)`,
        );
        if (lines.length === 0) lines.push("(empty directory)");
        if (truncated)
          lines.push(`[listing truncated at ${maxEntries} entries; use bash (ls, find) for more]`);
        return {
          isError: false,
          content: `${runtimePath}:\n${lines.join("\n")}`,
          details: { path: runtimePath, entries: items.length, truncated },
        };
      });
    },
  };
}
