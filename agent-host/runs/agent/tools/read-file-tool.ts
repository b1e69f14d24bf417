import { z } from "zod";
import { resolveRuntimePath } from "../runtime-path.ts";
import type { Tool } from "../tool.ts";
import { refusingOnWorkspaceError } from "./file-tool-refusal.ts";

export const READ_FILE_TOOL_NAME = "read_file";
/**
 * Bytes shown per read; a larger file is shown up to this with a note. Below the loop's
 * DEFAULT_MAX_TOOL_OUTPUT_BYTES, so a read is never cut again on its way to the model.
 */
export const DEFAULT_READ_FILE_MAX_BYTES = 48 * 1024;

export interface ReadFileToolOptions {
  readonly maxBytes: number;
}

const readFileArgs = z.strictObject({
  path: z
    .string()
    .min(1)
    .describe("File to read: relative to the Workdir, or absolute under /home/gem/user-data."),
});

export type ReadFileArgs = z.output<typeof readFileArgs>;

/** Reads a regular file of the UserWorkspace through the safe layer (no symlinks, no FIFOs). */
export function createReadFileTool(options: Partial<ReadFileToolOptions> = {}): Tool<ReadFileArgs> {
  const maxBytes = options.maxBytes ?? DEFAULT_READ_FILE_MAX_BYTES;
  return {
    name: READ_FILE_TOOL_NAME,
    description:
      "Read a text file of your workspace. Paths are relative to the Workdir or absolute under /home/gem/user-data. " +
      `Shows at most ${maxBytes} bytes; use bash (head, tail, sed -n) for parts of larger files.`,
    parameters: readFileArgs,
    async execute(args, ctx, signal) {
      const resolved = resolveRuntimePath(args.path, ctx.workdirPath, "read");
      if (!resolved.ok) return resolved.refusal;
      const { workspacePath, runtimePath } = resolved;
      return refusingOnWorkspaceError(runtimePath, signal, async () => {
        const reader = await ctx.workspace.openRead(workspacePath, { signal });
        const size = reader.info.size;
        const wanted = Math.min(size, maxBytes);
        if (wanted === 0) {
          reader.close();
          return { isError: false, content: "(empty file)", details: { path: runtimePath, size } };
        }
        const chunks: Uint8Array[] = [];
        for await (const chunk of reader.stream({ range: { start: 0, end: wanted - 1 }, signal })) {
          chunks.push(chunk);
        }
        const bytes = Buffer.concat(chunks);
        const details = { path: runtimePath, size, shown_bytes: bytes.byteLength };
        // NUL does not occur in text: showing binary bytes as text only wastes the context.
        if (bytes.includes(0)) {
          return {
            isError: false,
            content: `${runtimePath} is a binary file (${size} bytes); inspect it with bash (file, xxd, od).`,
            details,
          };
        }
        const text = bytes.toString("utf8");
        if (bytes.byteLength >= size) return { isError: false, content: text, details };
        return {
          isError: false,
          content: `${text}\n[file is ${size} bytes; showed the first ${bytes.byteLength}. Use bash (tail -c, sed -n) for the rest.]`,
          details,
        };
      });
    },
  };
}
