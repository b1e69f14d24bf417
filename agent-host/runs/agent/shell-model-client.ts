import type { ModelClient } from "./model-client.ts";
import { BASH_TOOL_NAME } from "./tools/bash-tool.ts";

/** The shell client's `name`: the worker gives it the user's original text (it is executed). */
export const SHELL_MODEL_NAME = "shell";

/**
 * The model of the local Workcell when no LLM is configured: the user's latest message is
 * run as one `bash` call in the sandbox, and that call's output becomes the reply. It goes
 * through the same loop, tools and events as a real model, so the local stack shows the
 * whole path (tool.started/completed, message.delta/completed) and the command runs with
 * every sandbox rule (cwd = Workdir, timeout, output cap, cancellation).
 *
 * The worker should give it the user's original text, not a model-visible variant with
 * an attachment list prepended: that text is executed.
 */
export function createShellModelClient(): ModelClient {
  return {
    name: SHELL_MODEL_NAME,
    async complete(request, signal) {
      signal.throwIfAborted();
      if (!request.tools.some((tool) => tool.name === BASH_TOOL_NAME)) {
        return {
          ok: false,
          failure: {
            kind: "rejected",
            message: `The shell model needs the '${BASH_TOOL_NAME}' tool: include it in the run's tools.`,
          },
        };
      }
      const last = request.messages.at(-1);
      if (last?.role === "user") {
        const turn = request.messages.filter((m) => m.role === "assistant").length;
        return {
          ok: true,
          turn: {
            message: {
              role: "assistant",
              content: "",
              toolCalls: [
                {
                  id: `shell_${turn + 1}`,
                  name: BASH_TOOL_NAME,
                  arguments: JSON.stringify({ command: last.content }),
                },
              ],
            },
            finishReason: "tool_calls",
          },
        };
      }
      // After the call: its output (stdout, then notes on stderr / exit code) is the reply.
      const reply = last?.role === "tool" ? last.content : "";
      if (reply !== "") await request.onTextDelta?.(reply);
      return {
        ok: true,
        turn: {
          message: { role: "assistant", content: reply, toolCalls: [] },
          finishReason: "stop",
        },
      };
    },
  };
}
