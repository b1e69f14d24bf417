import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import {
  type ChatCompletionChunk,
  chatCompletionChunkSchema,
  chatCompletionSchema,
  chatCompletionsBody,
  completionAsChunk,
  wireErrorMessage,
} from "./chat-completions-wire.ts";
import { createCompletionAccumulator } from "./completion-accumulator.ts";
import type {
  ModelClient,
  ModelFailure,
  ModelFailureKind,
  ModelRequest,
  ModelResult,
} from "./model-client.ts";
import { parseRetryAfterMs, retryDelayMs } from "./retry-delay.ts";
import { readSseEvents, SseTooLargeError } from "./sse-events.ts";

export const DEFAULT_MODEL_REQUEST_TIMEOUT_MS = 60_000;
export const DEFAULT_MODEL_MAX_REQUEST_DURATION_MS = 10 * 60_000;
export const DEFAULT_MODEL_MAX_RETRIES = 3;
export const DEFAULT_MODEL_RETRY_BASE_DELAY_MS = 500;
export const DEFAULT_MODEL_RETRY_MAX_DELAY_MS = 20_000;
/** Bytes of an error body read for its message; the rest is not needed. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Characters of the server's error message quoted to the user. */
const MAX_QUOTED_MESSAGE_CHARS = 500;

export interface OpenAiCompatibleConfig {
  /** Up to and including the API version, e.g. https://api.openai.com/v1, http://127.0.0.1:11434/v1. */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer`; local servers often need none. */
  readonly apiKey?: string;
  readonly model: string;
  /**
   * Longest silence of one attempt: until the response headers, then between two chunks
   * of the stream. A server that never answers fails after this (and is retried).
   */
  readonly requestTimeoutMs: number;
  /** Longest one attempt may take in total, however steadily it streams. */
  readonly maxRequestDurationMs: number;
  /** Retries after a 429, a 5xx, a connection failure or a timeout (0 = one attempt). */
  readonly maxRetries: number;
  readonly retryBaseDelayMs: number;
  readonly retryMaxDelayMs: number;
  /** Ask for token usage in the stream (`stream_options.include_usage`). */
  readonly includeUsage: boolean;
  readonly temperature?: number;
}

export const DEFAULT_OPENAI_COMPATIBLE_CONFIG = Object.freeze({
  requestTimeoutMs: DEFAULT_MODEL_REQUEST_TIMEOUT_MS,
  maxRequestDurationMs: DEFAULT_MODEL_MAX_REQUEST_DURATION_MS,
  maxRetries: DEFAULT_MODEL_MAX_RETRIES,
  retryBaseDelayMs: DEFAULT_MODEL_RETRY_BASE_DELAY_MS,
  retryMaxDelayMs: DEFAULT_MODEL_RETRY_MAX_DELAY_MS,
  includeUsage: true,
});

export interface OpenAiCompatibleDeps {
  readonly config: OpenAiCompatibleConfig;
  readonly logger: Logger;
  /** Defaults to the global fetch. */
  readonly fetch?: typeof fetch;
  /** Jitter source, in [0, 1). */
  readonly random?: () => number;
}

/** Wraps an error thrown by `onTextDelta` on its way out of the attempt. */
class ConsumerFailed extends Error {
  override readonly name = "ConsumerFailed";
  constructor(cause: unknown) {
    super("onTextDelta failed", { cause });
  }
}

/** The outcome of one HTTP attempt. `retryable` is decided here, once, per failure. */
type Attempt =
  | { ok: true; result: ModelResult }
  | {
      ok: false;
      kind: ModelFailureKind;
      retryable: boolean;
      detail: string;
      httpStatus?: number;
      retryAfterMs?: number;
    };

/**
 * Chat Completions (`POST {baseUrl}/chat/completions`, `stream: true`, tools) over fetch,
 * for OpenAI and compatible servers (vLLM, Ollama, llama.cpp, LiteLLM …).
 *
 * Retries: a 429, a 5xx, a refused connection, a timeout or a stream cut short are retried
 * with backoff, but only while no text has been passed to `onTextDelta` yet: after that a
 * retry would stream the reply a second time into the run's events. Other 4xx are not
 * retried (the same request would be refused again).
 */
export function createOpenAiCompatibleClient(deps: OpenAiCompatibleDeps): ModelClient {
  const { config } = deps;
  const doFetch = deps.fetch ?? fetch;
  const random = deps.random ?? Math.random;
  const url = new URL(
    "chat/completions",
    config.baseUrl.endsWith("/") ? config.baseUrl : `${config.baseUrl}/`,
  );
  const logger = deps.logger.child({ model: config.model, model_host: url.host });

  async function attempt(
    request: ModelRequest,
    signal: AbortSignal,
    streamed: { any: boolean },
  ): Promise<Attempt> {
    const timeouts = new AbortController();
    let idle: NodeJS.Timeout | undefined;
    const armIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(() => timeouts.abort(), config.requestTimeoutMs);
    };
    const total = setTimeout(() => timeouts.abort(), config.maxRequestDurationMs);
    armIdle();
    const attemptSignal = AbortSignal.any([signal, timeouts.signal]);
    try {
      const response = await doFetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "text/event-stream, application/json",
          ...(config.apiKey ? { authorization: `Bearer ${config.apiKey}` } : {}),
        },
        body: JSON.stringify(
          chatCompletionsBody(
            {
              model: config.model,
              includeUsage: config.includeUsage,
              temperature: config.temperature,
            },
            request,
          ),
        ),
        signal: attemptSignal,
      });
      armIdle();
      if (!response.ok) return await httpFailure(response);
      const accumulator = createCompletionAccumulator();
      const deliver = async (chunk: ChatCompletionChunk): Promise<void> => {
        const text = accumulator.add(chunk);
        if (text === "" || request.onTextDelta === undefined) return;
        streamed.any = true;
        // The consumer's time (persisting an event) is not the server's silence.
        clearTimeout(idle);
        try {
          await request.onTextDelta(text);
        } catch (error) {
          throw new ConsumerFailed(error);
        }
        armIdle();
      };

      const contentType = response.headers.get("content-type") ?? "";
      if (contentType.includes("application/json")) {
        // The server ignored `stream: true`: one whole completion.
        const parsed = chatCompletionSchema.safeParse(await response.json());
        if (!parsed.success)
          return badResponse("the completion is not in the Chat Completions format");
        await deliver(completionAsChunk(parsed.data));
        return { ok: true, result: { ok: true, turn: accumulator.result() } };
      }
      if (response.body === null) return badResponse("the response has no body");

      let done = false;
      for await (const event of readSseEvents(response.body, armIdle)) {
        if (event.data === "[DONE]") {
          done = true;
          break;
        }
        let json: unknown;
        try {
          json = JSON.parse(event.data);
        } catch {
          return badResponse("a stream event is not JSON");
        }
        const chunk = chatCompletionChunkSchema.safeParse(json);
        if (!chunk.success) return badResponse("a stream event is not a Chat Completions chunk");
        if (chunk.data.error) {
          // An error in the middle of a stream (vLLM, LiteLLM): the server gave up.
          return {
            ok: false,
            kind: "unavailable",
            retryable: !streamed.any,
            detail: `the server reported an error in the stream: ${quote(wireErrorMessage(json))}`,
          };
        }
        await deliver(chunk.data);
      }
      if (!done && !accumulator.finished) {
        return {
          ok: false,
          kind: "unavailable",
          retryable: !streamed.any,
          detail: "the stream ended before the reply was complete",
        };
      }
      return { ok: true, result: { ok: true, turn: accumulator.result() } };
    } catch (error) {
      // The consumer's own failure (the run's events cannot be written) is not the
      // server's: it propagates as is, never retried or turned into a model failure.
      if (error instanceof ConsumerFailed) throw error.cause;
      if (signal.aborted) throw signal.reason;
      if (timeouts.signal.aborted) {
        return {
          ok: false,
          kind: "timeout",
          retryable: !streamed.any,
          detail: `no answer within ${config.requestTimeoutMs} ms (or the reply took longer than ${config.maxRequestDurationMs} ms)`,
        };
      }
      if (error instanceof SseTooLargeError) return badResponse(error.message);
      // fetch rejects with a TypeError for network failures (refused, reset, DNS).
      if (error instanceof TypeError) {
        const cause = (error as { cause?: { code?: unknown } }).cause?.code;
        return {
          ok: false,
          kind: "unavailable",
          retryable: !streamed.any,
          detail: `cannot reach the server${typeof cause === "string" ? ` (${cause})` : ""}`,
        };
      }
      throw error;
    } finally {
      clearTimeout(idle);
      clearTimeout(total);
      // Ends a body we stopped reading early (a bad event), so the connection is released.
      timeouts.abort();
    }
  }

  return {
    name: `openai-compatible:${config.model}`,
    async complete(request, signal) {
      signal.throwIfAborted();
      const streamed = { any: false };
      for (let n = 0; ; n++) {
        const outcome = await attempt(request, signal, streamed);
        if (outcome.ok) return outcome.result;
        const attempts = n + 1;
        if (!outcome.retryable || n >= config.maxRetries || streamed.any) {
          logger.warn(
            { kind: outcome.kind, http_status: outcome.httpStatus, attempts },
            "model request failed",
          );
          return { ok: false, failure: failureOf(outcome, attempts) };
        }
        const delayMs = retryDelayMs({
          attempt: n,
          baseDelayMs: config.retryBaseDelayMs,
          maxDelayMs: config.retryMaxDelayMs,
          retryAfterMs: outcome.retryAfterMs,
          random,
        });
        logger.info(
          {
            kind: outcome.kind,
            http_status: outcome.httpStatus,
            attempt: attempts,
            delay_ms: delayMs,
          },
          "model request failed; retrying",
        );
        try {
          await sleep(delayMs, undefined, { signal });
        } catch {
          throw signal.reason;
        }
      }
    },
  };

  function failureOf(outcome: Extract<Attempt, { ok: false }>, attempts: number): ModelFailure {
    const tries = attempts === 1 ? "" : ` (after ${attempts} attempts)`;
    const base = `The model server at ${url.origin} for model '${config.model}'`;
    const message = (() => {
      switch (outcome.kind) {
        case "rate_limited":
          return `${base} is rate-limiting requests${tries}: ${outcome.detail}. Wait and retry the run, or raise the server's limits.`;
        case "unavailable":
          return `${base} is unavailable${tries}: ${outcome.detail}. Check that it is running and reachable.`;
        case "timeout":
          return `${base} did not answer in time${tries}: ${outcome.detail}. Check that it is running, or raise the request timeout.`;
        case "rejected":
          return `${base} rejected the request: ${outcome.detail}.`;
        case "bad_response":
          return `${base} answered something that is not the Chat Completions protocol: ${outcome.detail}. Check the base URL (it usually ends in /v1).`;
      }
    })();
    return {
      kind: outcome.kind,
      message,
      ...(outcome.httpStatus === undefined ? {} : { httpStatus: outcome.httpStatus }),
    };
  }
}

async function httpFailure(response: Response): Promise<Attempt> {
  const status = response.status;
  const serverMessage = await readErrorMessage(response);
  const detail = `HTTP ${status}${serverMessage === undefined ? "" : `: ${quote(serverMessage)}`}`;
  if (status === 429) {
    const retryAfterMs = parseRetryAfterMs(response.headers.get("retry-after"), Date.now());
    return {
      ok: false,
      kind: "rate_limited",
      retryable: true,
      detail,
      httpStatus: status,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  if (status >= 500 || status === 408) {
    return { ok: false, kind: "unavailable", retryable: true, detail, httpStatus: status };
  }
  const hint =
    status === 401 || status === 403
      ? " (check the model API key)"
      : status === 404
        ? " (check the base URL, which usually ends in /v1, and the model name)"
        : "";
  return {
    ok: false,
    kind: "rejected",
    retryable: false,
    detail: detail + hint,
    httpStatus: status,
  };
}

/** The server's error message, from at most MAX_ERROR_BODY_BYTES of the body. */
async function readErrorMessage(response: Response): Promise<string | undefined> {
  if (response.body === null) return undefined;
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for await (const chunk of response.body) {
      chunks.push(chunk);
      total += chunk.byteLength;
      if (total >= MAX_ERROR_BODY_BYTES) break;
    }
  } catch {
    // A body cut short still may hold the message.
  }
  const text = Buffer.concat(chunks).subarray(0, MAX_ERROR_BODY_BYTES).toString("utf8");
  try {
    return wireErrorMessage(JSON.parse(text)) ?? (text.trim() || undefined);
  } catch {
    return text.trim() || undefined;
  }
}

function badResponse(detail: string): Attempt {
  return { ok: false, kind: "bad_response", retryable: false, detail };
}

function quote(message: string | undefined): string {
  if (message === undefined) return "no message";
  return message.length > MAX_QUOTED_MESSAGE_CHARS
    ? `${message.slice(0, MAX_QUOTED_MESSAGE_CHARS)}…`
    : message;
}
