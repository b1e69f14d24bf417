/**
 * The conversation as the agent loop keeps it: provider-neutral, so a ModelClient maps it
 * to its own wire format and the worker can store and replay it.
 */

/** A tool call as the model asked for it. `arguments` is the model's raw JSON text. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

export interface SystemMessage {
  readonly role: "system";
  readonly content: string;
}

export interface UserMessage {
  readonly role: "user";
  readonly content: string;
}

export interface AssistantMessage {
  readonly role: "assistant";
  /** Text of the reply; "" when the model only called tools. */
  readonly content: string;
  readonly toolCalls: readonly ToolCall[];
}

export interface ToolMessage {
  readonly role: "tool";
  readonly toolCallId: string;
  readonly content: string;
}

export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** Token counts as the model server reports them. */
export interface TokenUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export const ZERO_USAGE: TokenUsage = Object.freeze({ inputTokens: 0, outputTokens: 0 });

export function addUsage(a: TokenUsage, b: TokenUsage | undefined): TokenUsage {
  if (b === undefined) return a;
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
  };
}
