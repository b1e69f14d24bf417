import type { ChatCompletionChunk } from "./chat-completions-wire.ts";
import type { AssistantMessage, TokenUsage, ToolCall } from "./chat-message.ts";
import type { FinishReason, ModelTurn } from "./model-client.ts";

interface PartialToolCall {
  id: string;
  name: string;
  arguments: string;
}

export interface CompletionAccumulator {
  /** Folds one chunk in; returns the reply text it added ("" when none). */
  add(chunk: ChatCompletionChunk): string;
  /** True once a choice reported a finish reason. */
  readonly finished: boolean;
  result(): ModelTurn;
}

/**
 * Builds the assistant message from streamed chunks. Tool calls arrive in pieces keyed
 * by `index`: the id and name usually in the first piece, the JSON arguments spread over
 * many. Only choice 0 is read (the client never asks for more than one).
 */
export function createCompletionAccumulator(): CompletionAccumulator {
  let text = "";
  const calls: PartialToolCall[] = [];
  const byIndex = new Map<number, PartialToolCall>();
  let finishReason: string | undefined;
  let usage: TokenUsage | undefined;

  function callFor(
    index: number | null | undefined,
    id: string | null | undefined,
  ): PartialToolCall {
    if (index !== null && index !== undefined) {
      let call = byIndex.get(index);
      if (call === undefined) {
        call = { id: "", name: "", arguments: "" };
        calls.push(call);
        byIndex.set(index, call);
      }
      return call;
    }
    // Servers that omit `index` send each call whole: a new id starts a call, a piece
    // without an id continues the last one.
    const known = id ? calls.find((c) => c.id === id) : calls[calls.length - 1];
    if (known !== undefined) return known;
    const call = { id: "", name: "", arguments: "" };
    calls.push(call);
    return call;
  }

  return {
    add(chunk) {
      if (chunk.usage) {
        usage = {
          inputTokens: chunk.usage.prompt_tokens ?? 0,
          outputTokens: chunk.usage.completion_tokens ?? 0,
        };
      }
      const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
      if (!choice) return "";
      if (choice.finish_reason) finishReason = choice.finish_reason;
      const delta = choice.delta;
      if (!delta) return "";
      for (const piece of delta.tool_calls ?? []) {
        const call = callFor(piece.index, piece.id);
        if (piece.id && call.id === "") call.id = piece.id;
        // The name is sent whole in one piece; appending would double it on servers that
        // repeat it in every piece.
        if (piece.function?.name && call.name === "") call.name = piece.function.name;
        if (piece.function?.arguments) call.arguments += piece.function.arguments;
      }
      const added = delta.content ?? "";
      text += added;
      return added;
    },
    get finished() {
      return finishReason !== undefined;
    },
    result() {
      const toolCalls: ToolCall[] = calls.map((call, n) => ({
        // Some servers send no id; the loop needs one to pair results with calls.
        id: call.id === "" ? `call_${n}` : call.id,
        name: call.name,
        arguments: call.arguments === "" ? "{}" : call.arguments,
      }));
      const message: AssistantMessage = { role: "assistant", content: text, toolCalls };
      return {
        message,
        finishReason: finishReasonOf(finishReason),
        ...(usage === undefined ? {} : { usage }),
      };
    },
  };
}

function finishReasonOf(reason: string | undefined): FinishReason {
  switch (reason) {
    case "stop":
    case "tool_calls":
    case "length":
    case "content_filter":
      return reason;
    case "function_call":
      return "tool_calls";
    default:
      return "other";
  }
}
