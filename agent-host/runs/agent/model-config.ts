import type { Logger } from "pino";
import { z } from "zod";
import type { ModelClient } from "./model-client.ts";
import {
  createOpenAiCompatibleClient,
  DEFAULT_MODEL_MAX_REQUEST_DURATION_MS,
  DEFAULT_MODEL_MAX_RETRIES,
  DEFAULT_MODEL_REQUEST_TIMEOUT_MS,
  DEFAULT_MODEL_RETRY_BASE_DELAY_MS,
  DEFAULT_MODEL_RETRY_MAX_DELAY_MS,
} from "./openai-compatible-client.ts";
import { createShellModelClient } from "./shell-model-client.ts";

/** Highest retry count accepted: beyond it a dead server holds a run for many minutes. */
export const MAX_MODEL_RETRIES = 10;

const positiveMs = () => z.number().int().positive();

/**
 * Which model runs use. Parsed once where agent-host is wired (from env), never at import.
 * With no model configured the local default is `shell` (no LLM needed).
 */
export const modelConfigSchema = z.discriminatedUnion("kind", [
  z
    .strictObject({
      kind: z.literal("shell").describe("No LLM: each user message is run as one shell command."),
    })
    .describe("The shell model."),
  z
    .strictObject({
      kind: z.literal("openai-compatible").describe("A Chat Completions server."),
      baseUrl: z
        .url({
          protocol: /^https?$/,
          error: "must be an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1",
        })
        .describe(
          "Base URL up to the API version, e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1.",
        ),
      apiKey: z
        .string()
        .min(1)
        .optional()
        .describe("Bearer token; leave unset for servers without auth."),
      model: z
        .string()
        .min(1)
        .describe("Model id, e.g. gpt-4o-mini, llama3.1, Qwen/Qwen2.5-7B-Instruct."),
      requestTimeoutMs: positiveMs()
        .default(DEFAULT_MODEL_REQUEST_TIMEOUT_MS)
        .describe("Longest silence of the server (before the response, between chunks), in ms."),
      maxRequestDurationMs: positiveMs()
        .default(DEFAULT_MODEL_MAX_REQUEST_DURATION_MS)
        .describe("Longest one model call may take, in ms."),
      maxRetries: z
        .number()
        .int()
        .min(0)
        .max(MAX_MODEL_RETRIES)
        .default(DEFAULT_MODEL_MAX_RETRIES)
        .describe("Retries after 429, 5xx, connection failures and timeouts."),
      retryBaseDelayMs: positiveMs()
        .default(DEFAULT_MODEL_RETRY_BASE_DELAY_MS)
        .describe("First backoff bound, doubled per retry, in ms."),
      retryMaxDelayMs: positiveMs()
        .default(DEFAULT_MODEL_RETRY_MAX_DELAY_MS)
        .describe("Longest wait between retries, Retry-After included, in ms."),
      includeUsage: z
        .boolean()
        .default(true)
        .describe(
          "Ask for token usage in the stream; turn off for servers that reject stream_options.",
        ),
      temperature: z
        .number()
        .min(0)
        .max(2)
        .optional()
        .describe("Sampling temperature; the server's default when unset."),
    })
    .describe("An OpenAI-compatible Chat Completions server."),
]);

export type ModelConfig = z.output<typeof modelConfigSchema>;
export type ModelConfigInput = z.input<typeof modelConfigSchema>;

/**
 * The client for a config. `model` overrides the configured model id (a run's
 * `agent.model` option); the shell model ignores it.
 */
export function createModelClient(
  config: ModelConfig,
  deps: { readonly logger: Logger; readonly fetch?: typeof fetch; readonly model?: string },
): ModelClient {
  switch (config.kind) {
    case "shell":
      return createShellModelClient();
    case "openai-compatible":
      return createOpenAiCompatibleClient({
        config: { ...config, ...(deps.model === undefined ? {} : { model: deps.model }) },
        logger: deps.logger,
        ...(deps.fetch === undefined ? {} : { fetch: deps.fetch }),
      });
  }
}
