// AWS Lambda behind API Gateway (HTTP API, payload v2) or a Function URL: `handler`.
// One request at a time per instance, so one database connection; the client lives as
// long as the instance (module scope is the instance's lifetime on Lambda).
import { handle } from "hono/aws-lambda";
import pino from "pino";
import postgres from "postgres";
import { functionsEnvSchema } from "../../shared/env/functions-env.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";
import { createApp } from "../app.ts";
import { createTokenVerifier } from "../auth/create-token-verifier.ts";
import { createPollingRunEventWaiter } from "../run-events/run-event-waiter.ts";
import { createRuntimeDeps } from "../wiring/runtime-deps.ts";

/**
 * `handle` buffers the response, and API Gateway gives up after 29 s: an event stream on
 * Lambda ends before that with what it has, and the client resumes with Last-Event-ID.
 */
export const LAMBDA_EVENT_STREAM_MAX_MS = 20_000;

const env = parseEnv(functionsEnvSchema, process.env);
const logger = pino({ level: env.LOG_LEVEL });
const sql = postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} });
const app = createApp(
  createRuntimeDeps({
    env,
    sql,
    logger,
    auth: createTokenVerifier(env),
    // A frozen instance cannot hold a LISTEN: poll.
    runEvents: createPollingRunEventWaiter(),
    limits: { eventStreamMaxMs: LAMBDA_EVENT_STREAM_MAX_MS },
  }),
);

export const handler = handle(app);
