import { MAX_AGENT_STEPS } from "../../../shared/contracts/run.ts";

/**
 * Bounds of one agent loop. The worker fills `maxTurns` from the run's `agent.max_steps`;
 * tests shrink any of them.
 */
export interface AgentLimits {
  /** Model calls per run; reaching it without a final answer fails the run. */
  readonly maxTurns: number;
  /**
   * Bytes of one tool result sent back to the model (and put in `tool.completed`); the
   * rest is cut at a UTF-8 boundary with a note. Protects the context window and the
   * event store from a `cat` of a huge file.
   */
  readonly maxToolOutputBytes: number;
  /** Tokens of one model reply (`max_tokens`); undefined = the server's default. */
  readonly maxOutputTokensPerTurn: number | undefined;
  /**
   * Input + output tokens over the whole run, as the server reports them; no new turn
   * starts past it. Servers that report no usage are not bounded by this.
   */
  readonly maxTotalTokens: number | undefined;
  /**
   * Streamed text is batched into `message.delta` events of at least this many characters
   * (or older than `deltaFlushMs`), so a token-per-event stream does not become one
   * database row per token. 0 = one event per delta.
   */
  readonly deltaFlushChars: number;
  readonly deltaFlushMs: number;
  /**
   * Live output of a running command (`tool.output`, tool-output-stream.ts): chunks are
   * coalesced for up to `toolOutputFlushMs`, one event holds at most
   * `toolOutputMaxEventBytes` of text, and one run's events at most `toolOutputMaxRunBytes`
   * in all (then a marker, then nothing until `tool.completed`).
   */
  readonly toolOutputFlushMs: number;
  readonly toolOutputMaxEventBytes: number;
  readonly toolOutputMaxRunBytes: number;
}

export const DEFAULT_MAX_TURNS = 50;
export const DEFAULT_MAX_TOOL_OUTPUT_BYTES = 64 * 1024;
export const DEFAULT_MAX_TOTAL_TOKENS = 2_000_000;
export const DEFAULT_DELTA_FLUSH_CHARS = 128;
export const DEFAULT_DELTA_FLUSH_MS = 100;
export const DEFAULT_TOOL_OUTPUT_FLUSH_MS = 200;
export const DEFAULT_TOOL_OUTPUT_MAX_EVENT_BYTES = 8 * 1024;
export const DEFAULT_TOOL_OUTPUT_MAX_RUN_BYTES = 1024 * 1024;

export const DEFAULT_AGENT_LIMITS: AgentLimits = Object.freeze({
  maxTurns: Math.min(DEFAULT_MAX_TURNS, MAX_AGENT_STEPS),
  maxToolOutputBytes: DEFAULT_MAX_TOOL_OUTPUT_BYTES,
  maxOutputTokensPerTurn: undefined,
  maxTotalTokens: DEFAULT_MAX_TOTAL_TOKENS,
  deltaFlushChars: DEFAULT_DELTA_FLUSH_CHARS,
  deltaFlushMs: DEFAULT_DELTA_FLUSH_MS,
  toolOutputFlushMs: DEFAULT_TOOL_OUTPUT_FLUSH_MS,
  toolOutputMaxEventBytes: DEFAULT_TOOL_OUTPUT_MAX_EVENT_BYTES,
  toolOutputMaxRunBytes: DEFAULT_TOOL_OUTPUT_MAX_RUN_BYTES,
});
