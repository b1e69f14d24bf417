import { z } from "zod";
import { resolveRuntimePath } from "../runtime-path.ts";
import type { Tool } from "../tool.ts";
import { refusingOnWorkspaceError } from "./file-tool-refusal.ts";

export const WRITE_FILE_TOOL_NAME = "write_file";
/** Largest file written by one call (what a model can produce in a call is far less). */
export const DEFAULT_WRITE_FILE_MAX_BYTES = 16 * 1024 * 1024;

export interface WriteFileToolOptions {
  readonly maxBytes: number;
}

const writeFileArgs = z.strictObject({
  path: z
    .string()
    .min(1)
    .describe("File to write: relative to the Workdir, or absolute under /home/gem/user-data."),
  content: z.string().describe("The whole content of the file (UTF-8 text)."),
  overwrite: z
    .boolean()
    .default(false)
    .describe("Replace the file if it exists. Without it an existing file is left unchanged."),
});

export type WriteFileArgs = z.output<typeof writeFileArgs>;

/**
 * Writes a file through the safe layer: atomic (temp file + rename), no-clobber unless
 * `overwrite`, never through a symlink, missing parent directories created (0700) so
 * `outputs/…` works on first use. Writes to the skills mount or outside the UserWorkspace
 * are refused before the layer is asked (runtime-path.ts).
 */
export function createWriteFileTool(
  options: Partial<WriteFileToolOptions> = {},
): Tool<WriteFileArgs> {
  const maxBytes = options.maxBytes ?? DEFAULT_WRITE_FILE_MAX_BYTES;
  return {
    name: WRITE_FILE_TOOL_NAME,
    description:
      "Create a text file in your workspace (relative to the Workdir, or absolute under /home/gem/user-data); " +
      "missing directories are created. An existing file is not replaced unless overwrite is true.",
    parameters: writeFileArgs,
    async execute(args, ctx, signal) {
      const resolved = resolveRuntimePath(args.path, ctx.workdirPath, "write", ctx.fileView);
      if (!resolved.ok) return resolved.refusal;
      const { workspacePath, runtimePath } = resolved;
      return refusingOnWorkspaceError(
        runtimePath,
        signal,
        async () => {
          const info = await ctx.workspace.writeFile(workspacePath, args.content, {
            overwrite: args.overwrite,
            parents: true,
            maxBytes,
            signal,
          });
          return {
            isError: false,
            content: `Wrote ${info.size} bytes to ${runtimePath}.`,
            details: { path: runtimePath, size: info.size, overwrite: args.overwrite },
          };
        },
        {
          name_exists:
            "an entry with this name already exists and was left unchanged; pass overwrite: true to replace a file, or choose another name.",
        },
      );
    },
  };
}
