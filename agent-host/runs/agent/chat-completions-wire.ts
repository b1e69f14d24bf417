import { z } from "zod";
import type { ChatMessage } from "./chat-message.ts";
import type { ModelRequest } from "./model-client.ts";

// The Chat Completions wire format, as far as this client uses it. Schemas are loose and
// fields nullish on purpose: compatible servers (vLLM, Ollama, llama.cpp, LiteLLM) add
// fields, send `null` where OpenAI omits, and omit where OpenAI sends `null`.

const wireToolCallDelta = z.looseObject({
  index: z.number().int().nonnegative().nullish(),
  id: z.string().nullish(),
  function: z
    .looseObject({ name: z.string().nullish(), arguments: z.string().nullish() })
    .nullish(),
});

const wireUsage = z.looseObject({
  prompt_tokens: z.number().nonnegative().nullish(),
  completion_tokens: z.number().nonnegative().nullish(),
});

const wireError = z.union([
  z.string(),
  z.looseObject({ message: z.string().nullish(), type: z.string().nullish() }),
]);

/** One `data:` payload of a streamed completion. */
export const chatCompletionChunkSchema = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        index: z.number().int().nullish(),
        delta: z
          .looseObject({
            content: z.string().nullish(),
            tool_calls: z.array(wireToolCallDelta).nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: wireUsage.nullish(),
  error: wireError.nullish(),
});

export type ChatCompletionChunk = z.output<typeof chatCompletionChunkSchema>;

/** A whole (non-streamed) completion: some servers ignore `stream: true`. */
export const chatCompletionSchema = z.looseObject({
  choices: z
    .array(
      z.looseObject({
        message: z.looseObject({
          content: z.string().nullish(),
          tool_calls: z
            .array(
              z.looseObject({
                id: z.string().nullish(),
                function: z.looseObject({ name: z.string(), arguments: z.string().nullish() }),
              }),
            )
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: wireUsage.nullish(),
});

/** The same completion as one chunk, so one accumulator handles both shapes. */
export function completionAsChunk(
  completion: z.output<typeof chatCompletionSchema>,
): ChatCompletionChunk {
  const choice = completion.choices[0];
  return {
    choices: [
      {
        index: 0,
        delta: {
          content: choice?.message.content,
          tool_calls: choice?.message.tool_calls?.map((call, index) => ({
            index,
            id: call.id,
            function: { name: call.function.name, arguments: call.function.arguments },
          })),
        },
        finish_reason: choice?.finish_reason,
      },
    ],
    usage: completion.usage,
  };
}

/** The server's error message from an error body or stream payload, if it has one. */
export function wireErrorMessage(body: unknown): string | undefined {
  const parsed = z
    .looseObject({ error: wireError.nullish(), message: z.string().nullish() })
    .safeParse(body);
  if (!parsed.success) return undefined;
  const error = parsed.data.error;
  if (typeof error === "string") return error;
  return error?.message ?? parsed.data.message ?? undefined;
}

export interface ChatCompletionsOptions {
  readonly model: string;
  readonly includeUsage: boolean;
  readonly temperature: number | undefined;
}

/** The request body of `POST {baseUrl}/chat/completions` with streaming and tools. */
export function chatCompletionsBody(
  options: ChatCompletionsOptions,
  request: ModelRequest,
): Record<string, unknown> {
  return {
    model: options.model,
    messages: request.messages.map(toWireMessage),
    stream: true,
    ...(options.includeUsage ? { stream_options: { include_usage: true } } : {}),
    ...(request.tools.length === 0
      ? {}
      : {
          tools: request.tools.map((tool) => ({
            type: "function",
            function: {
              name: tool.name,
              description: tool.description,
              parameters: tool.parameters,
            },
          })),
          tool_choice: "auto",
        }),
    // max_tokens rather than max_completion_tokens: it is the one every compatible server knows.
    ...(request.maxOutputTokens === undefined ? {} : { max_tokens: request.maxOutputTokens }),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
  };
}

function toWireMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content };
    case "assistant":
      if (message.toolCalls.length === 0) return { role: "assistant", content: message.content };
      return {
        role: "assistant",
        // OpenAI wants null rather than "" next to tool calls; servers accept both.
        content: message.content === "" ? null : message.content,
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: call.arguments },
        })),
      };
    case "tool":
      return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
  }
}
