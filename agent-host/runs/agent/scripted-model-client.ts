import type { TokenUsage, ToolCall } from "./chat-message.ts";
import type { ModelClient, ModelFailure, ModelRequest, ModelResult } from "./model-client.ts";

export interface ScriptedToolCall {
  readonly name: string;
  /** An object is sent as JSON; a string is sent as is (to script malformed arguments). */
  readonly arguments: string | Readonly<Record<string, unknown>>;
  readonly id?: string;
}

/** One model turn of a script. */
export type ScriptedStep =
  | { readonly text: string; readonly usage?: TokenUsage }
  | {
      readonly toolCalls: readonly ScriptedToolCall[];
      readonly text?: string;
      readonly usage?: TokenUsage;
    }
  | { readonly failure: ModelFailure }
  /** Full control, e.g. to wait for the abort signal or to inspect the request. */
  | { readonly respond: (request: ModelRequest, signal: AbortSignal) => Promise<ModelResult> };

export interface ScriptedModelClient extends ModelClient {
  /** Every request received, in order (the conversation the model would have seen). */
  readonly requests: readonly ModelRequest[];
}

/** Characters per streamed piece of scripted text, so tests see several deltas. */
export const SCRIPTED_DELTA_CHARS = 8;

/**
 * Replays a fixed script, one step per model call, then fails with `bad_response` (a test
 * that runs past its script is a broken test, and says so). For tests and demos only.
 */
export function createScriptedModelClient(steps: readonly ScriptedStep[]): ScriptedModelClient {
  const requests: ModelRequest[] = [];
  return {
    name: "scripted",
    requests,
    async complete(request, signal) {
      signal.throwIfAborted();
      const turn = requests.length;
      requests.push(request);
      const step = steps[turn];
      if (step === undefined) {
        return {
          ok: false,
          failure: {
            kind: "bad_response",
            message: `The scripted model has no step ${turn + 1} (the script has ${steps.length}).`,
          },
        };
      }
      if ("failure" in step) return { ok: false, failure: step.failure };
      if ("respond" in step) return step.respond(request, signal);
      const text = step.text ?? "";
      for (let at = 0; at < text.length; at += SCRIPTED_DELTA_CHARS) {
        signal.throwIfAborted();
        await request.onTextDelta?.(text.slice(at, at + SCRIPTED_DELTA_CHARS));
      }
      const toolCalls: ToolCall[] = ("toolCalls" in step ? step.toolCalls : []).map((call, n) => ({
        id: call.id ?? `call_${turn + 1}_${n + 1}`,
        name: call.name,
        arguments:
          typeof call.arguments === "string" ? call.arguments : JSON.stringify(call.arguments),
      }));
      return {
        ok: true,
        turn: {
          message: { role: "assistant", content: text, toolCalls },
          finishReason: toolCalls.length > 0 ? "tool_calls" : "stop",
          ...(step.usage === undefined ? {} : { usage: step.usage }),
        },
      };
    },
  };
}
