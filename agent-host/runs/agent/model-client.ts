import type { AssistantMessage, ChatMessage, TokenUsage } from "./chat-message.ts";

/** A tool as the model sees it: a name, a description and a JSON Schema of its arguments. */
export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** Why the model stopped. The loop decides by the presence of tool calls, not by this. */
export type FinishReason = "stop" | "tool_calls" | "length" | "content_filter" | "other";

export interface ModelRequest {
  /** The whole conversation, system prompt first. */
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolSpec[];
  /** Bound on the tokens of this one reply; the server's default when absent. */
  readonly maxOutputTokens?: number;
  /**
   * Called with each piece of reply text as it streams, in order, and awaited: a slow
   * consumer slows the stream down instead of buffering it without bound.
   */
  readonly onTextDelta?: (text: string) => void | Promise<void>;
}

export interface ModelTurn {
  readonly message: AssistantMessage;
  readonly finishReason: FinishReason;
  /** Absent when the server does not report it. */
  readonly usage?: TokenUsage;
}

/**
 * Expected ways a model call fails, as values (docs/style.md "expected outcomes"):
 * - `rate_limited`: 429 after every retry;
 * - `unavailable`: 5xx, connection failures or a broken stream after every retry;
 * - `timeout`: no answer within the per-request timeout, after every retry;
 * - `rejected`: the server refused the request (4xx other than 429) — retrying will not help;
 * - `bad_response`: the server answered something that is not the protocol.
 */
export type ModelFailureKind =
  | "rate_limited"
  | "unavailable"
  | "timeout"
  | "rejected"
  | "bad_response";

export interface ModelFailure {
  readonly kind: ModelFailureKind;
  /** For the user and the logs: what happened and how to fix it. Never contains the API key. */
  readonly message: string;
  /** HTTP status of the last attempt, when there was one. */
  readonly httpStatus?: number;
}

export type ModelResult = { ok: true; turn: ModelTurn } | { ok: false; failure: ModelFailure };

/**
 * One chat turn: messages and tool specs in, a streamed reply and a final assistant
 * message (with optional tool calls) out.
 *
 * Implementations: openai-compatible-client.ts (Chat Completions over fetch),
 * shell-model-client.ts (no LLM: runs the user's message as one `bash` call),
 * scripted-model-client.ts (replays a fixed script, for tests).
 *
 * Errors: expected failures are returned as `{ ok: false }`; when `signal` aborts the
 * call rejects with the signal's reason; anything else thrown is a bug.
 */
export interface ModelClient {
  /** For logs and run metadata, e.g. "openai-compatible:llama3.1". */
  readonly name: string;
  complete(request: ModelRequest, signal: AbortSignal): Promise<ModelResult>;
}
