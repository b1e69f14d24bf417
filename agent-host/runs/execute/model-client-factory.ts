import type { Logger } from "pino";
import type { AgentHostEnv } from "../../../shared/env/agent-host-env.ts";
import { EnvError } from "../../../shared/env/env-error.ts";
import {
  createModelClient,
  type ModelClient,
  type ModelConfig,
  modelConfigSchema,
} from "../agent/index.ts";

/** What the worker knows when it picks a model for one run. */
export interface ModelClientRequest {
  readonly runId: string;
  readonly uid: string;
  /** The run's user message (for a sub-agent: its task). */
  readonly input: string;
  /** 0 for a root run, parent's depth + 1 for a sub-agent. */
  readonly depth: number;
  /** The run's `agent.model` override, when it has one. */
  readonly model?: string;
  readonly logger: Logger;
}

/**
 * Picks the ModelClient of each run (root and sub-agent). main.ts uses
 * `modelClientFactoryFor(config)`; tests hand out scripted clients per run.
 */
export type ModelClientFactory = (request: ModelClientRequest) => ModelClient;

/** One client per run from a deployment's model config (`shell` or `openai-compatible`). */
export function modelClientFactoryFor(
  config: ModelConfig,
  deps: { readonly fetch?: typeof fetch } = {},
): ModelClientFactory {
  return (request) =>
    createModelClient(config, {
      logger: request.logger,
      ...(deps.fetch === undefined ? {} : { fetch: deps.fetch }),
      ...(request.model === undefined ? {} : { model: request.model }),
    });
}

/**
 * The model config of agent-host's environment (already parsed by agentHostEnvSchema): no
 * MODEL_BASE_URL means the `shell` model (the local Workcell works without an LLM);
 * otherwise an OpenAI-compatible server with MODEL_NAME and the optional MODEL_API_KEY.
 * A base URL without a model name throws an EnvError at start-up, rather than failing
 * every run at its first model call.
 */
export function modelConfigFromEnv(
  env: Pick<
    AgentHostEnv,
    "MODEL_BASE_URL" | "MODEL_API_KEY" | "MODEL_NAME" | "MODEL_REQUEST_TIMEOUT_SECONDS"
  >,
): ModelConfig {
  if (env.MODEL_BASE_URL === undefined) return modelConfigSchema.parse({ kind: "shell" });
  if (env.MODEL_NAME === undefined) {
    throw new EnvError([
      {
        variable: "MODEL_NAME",
        message:
          "is required when MODEL_BASE_URL is set. Expected: the model id to send, e.g. gpt-4o-mini or llama3.1.",
      },
    ]);
  }
  return modelConfigSchema.parse({
    kind: "openai-compatible",
    baseUrl: env.MODEL_BASE_URL,
    model: env.MODEL_NAME,
    ...(env.MODEL_API_KEY === undefined ? {} : { apiKey: env.MODEL_API_KEY }),
    ...(env.MODEL_REQUEST_TIMEOUT_SECONDS === undefined
      ? {}
      : { requestTimeoutMs: env.MODEL_REQUEST_TIMEOUT_SECONDS * 1000 }),
  });
}
