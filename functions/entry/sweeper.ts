// Scheduled Lambda (EventBridge rule, e.g. every minute): re-dispatches pending runs whose
// queue message was lost (functions/runs/dispatch-sweeper.ts).
import pino from "pino";
import postgres from "postgres";
import { createDb } from "../../shared/db/client.ts";
import { functionsEnvSchema } from "../../shared/env/functions-env.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";
import { createSqsRunQueue } from "../queue/sqs-run-queue.ts";
import { sweepPendingRuns } from "../runs/dispatch-sweeper.ts";
import { createAwsClients } from "../wiring/aws-clients.ts";

/** One sweep must finish well inside the function's timeout. */
export const SWEEP_BUDGET_MS = 50_000;

const env = parseEnv(functionsEnvSchema, process.env);
const logger = pino({ level: env.LOG_LEVEL });
const db = createDb(postgres(env.DATABASE_URL, { max: 1, onnotice: () => {} }));
const runQueue = createSqsRunQueue({ sqs: createAwsClients(env).sqs, queueUrl: env.RUN_QUEUE_URL });

export async function handler(): Promise<{ ran: boolean; sent: number; failed: number }> {
  const result = await sweepPendingRuns(
    { db, runQueue, logger },
    AbortSignal.timeout(SWEEP_BUDGET_MS),
  );
  return result.ran
    ? { ran: true, sent: result.sent.length, failed: result.failed.length }
    : { ran: false, sent: 0, failed: 0 };
}
