import type { ToolResult } from "../tool.ts";
import { classifyToolError, refusalResult } from "../tool-failure.ts";

/**
 * Runs a workspace operation for a file tool and turns a refusal of the file layer
 * (symlink, special file, missing, exists, too large …) into a result naming the path the
 * model used: the layer's own messages speak of UserWorkspace-relative paths, which the
 * model never sees. Anything that is not a refusal is rethrown for the loop to judge.
 */
export async function refusingOnWorkspaceError(
  runtimePath: string,
  signal: AbortSignal,
  operation: () => Promise<ToolResult>,
  hints: Readonly<Record<string, string>> = {},
): Promise<ToolResult> {
  try {
    return await operation();
  } catch (error) {
    const failure = classifyToolError(error, signal);
    if (failure.kind !== "refused") throw error;
    const reason = failure.result.details?.reason;
    const code = String(failure.result.details?.error_code);
    const hint = typeof reason === "string" ? hints[reason] : undefined;
    const message = (error as Error).message;
    return refusalResult(
      code,
      typeof reason === "string" ? reason : undefined,
      `${runtimePath}: ${hint ?? message}`,
      { path: runtimePath },
    );
  }
}
