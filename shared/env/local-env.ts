import { z } from "zod";
import { agentHostEnvSchema, DEFAULT_DATA_PLANE_PORT } from "./agent-host-env.ts";
import { corsOriginsVar, logLevelVar, portVar } from "./env-vars.ts";
import { metricsEnvShape } from "./metrics-env.ts";

export const DEFAULT_LOCAL_PORT = 8080;
export const DEFAULT_LOCAL_DATA_DIR = "./.data";
export const DEFAULT_AWS_EMULATOR_PORT = 4566;
export const DEFAULT_CONSOLE_DIR = "web/dist";

/**
 * Environment of the one-command local stack. Everything has a default so that
 * `npm start` works on a fresh checkout; the embedded infrastructure configures itself.
 */
export const localEnvSchema = z.object({
  PORT: portVar()
    .default(DEFAULT_LOCAL_PORT)
    .describe(`TCP port of the local API (default ${DEFAULT_LOCAL_PORT}).`),
  DATA_DIR: z
    .string()
    .min(1)
    .refine((dir) => !dir.includes("\0"), "must not contain a NUL character")
    .default(DEFAULT_LOCAL_DATA_DIR)
    .describe(
      `Directory for local data: database, queues, workspaces (default ${DEFAULT_LOCAL_DATA_DIR}).`,
    ),
  AWS_EMULATOR_PORT: portVar()
    .default(DEFAULT_AWS_EMULATOR_PORT)
    .describe(
      `TCP port of the embedded SQS + S3 emulator (fauxqs); presigned upload URLs point at it (default ${DEFAULT_AWS_EMULATOR_PORT}).`,
    ),
  DATA_PLANE_PORT: portVar()
    .default(DEFAULT_DATA_PLANE_PORT)
    .describe(`TCP port of the local data plane (default ${DEFAULT_DATA_PLANE_PORT}).`),
  // One ops listener for the whole process: both planes' series in one registry.
  ...metricsEnvShape,
  // The same model settings as an agent-host: unset MODEL_BASE_URL = the `shell` model.
  MODEL_BASE_URL: agentHostEnvSchema.shape.MODEL_BASE_URL,
  MODEL_API_KEY: agentHostEnvSchema.shape.MODEL_API_KEY,
  MODEL_NAME: agentHostEnvSchema.shape.MODEL_NAME,
  MODEL_REQUEST_TIMEOUT_SECONDS: agentHostEnvSchema.shape.MODEL_REQUEST_TIMEOUT_SECONDS,
  DOCKER_CALL_TIMEOUT_SECONDS: agentHostEnvSchema.shape.DOCKER_CALL_TIMEOUT_SECONDS,
  SANDBOX_IMAGE: agentHostEnvSchema.shape.SANDBOX_IMAGE,
  RUNTIME_ASSETS_DIR: agentHostEnvSchema.shape.RUNTIME_ASSETS_DIR,
  SANDBOX_STATE_DIR: agentHostEnvSchema.shape.SANDBOX_STATE_DIR,
  WORKCELL_NETWORK_DEFAULT_ALLOW: agentHostEnvSchema.shape.WORKCELL_NETWORK_DEFAULT_ALLOW,
  EGRESS_OPEN_CIDRS: agentHostEnvSchema.shape.EGRESS_OPEN_CIDRS,
  WORKCELL_CORS_ORIGINS: corsOriginsVar()
    .optional()
    .describe(
      "Other browser origins allowed to call the local API and data plane (CORS), comma-separated, e.g. http://localhost:5173; the local API's own origin is always allowed on the data plane.",
    ),
  CONSOLE_DIR: z
    .string()
    .min(1)
    .default(DEFAULT_CONSOLE_DIR)
    .describe(
      `The built web console served at / (default ${DEFAULT_CONSOLE_DIR}, relative to the repository; \`npm run build:web\` makes it).`,
    ),
  SANDBOX_KEEP_WARM_SECONDS: agentHostEnvSchema.shape.SANDBOX_KEEP_WARM_SECONDS,
  WORKDIR_SUBVOLUMES: agentHostEnvSchema.shape.WORKDIR_SUBVOLUMES,
  SANDBOX_PROCESS_POOL_SIZE: agentHostEnvSchema.shape.SANDBOX_PROCESS_POOL_SIZE,
  LOG_LEVEL: logLevelVar().describe(
    "Log level: fatal, error, warn, info (default), debug, trace or silent.",
  ),
});

export type LocalEnv = z.output<typeof localEnvSchema>;
