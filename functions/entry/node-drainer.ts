// EventBridge-invoked Lambda: a node of the Auto Scaling group is terminating; quiesce
// and drain it, then let the group go on (functions/nodes/drain-node.ts, decision 0108).
import { AutoScalingClient, CompleteLifecycleActionCommand } from "@aws-sdk/client-auto-scaling";
import pino from "pino";
import postgres from "postgres";
import { createDb } from "../../shared/db/client.ts";
import { nodeDrainerEnvSchema } from "../../shared/env/node-drainer-env.ts";
import { parseEnv } from "../../shared/env/parse-env.ts";
import { loggerOptions } from "../../shared/logging/safe-error-serializer.ts";
import { type DrainOutcome, drainNode, lifecycleEventSchema } from "../nodes/drain-node.ts";

const env = parseEnv(nodeDrainerEnvSchema, process.env);
const logger = pino(loggerOptions(env.LOG_LEVEL));
// Every read and the quiesce end within the statement timeout: a hung database fails the
// invocation (the hook's timeout then lets the group go on) instead of holding it.
const db = createDb(
  postgres(env.DATABASE_URL, {
    max: 1,
    onnotice: () => {},
    connect_timeout: 10,
    connection: { statement_timeout: env.DB_STATEMENT_TIMEOUT_SECONDS * 1000 },
  }),
);
const autoscaling = new AutoScalingClient({
  ...(env.AWS_REGION === undefined ? {} : { region: env.AWS_REGION }),
  maxAttempts: 3,
});

export async function handler(event: unknown): Promise<{ node_id: string; outcome: DrainOutcome }> {
  // A malformed event is refused before anything changes; the hook's timeout (default
  // result CONTINUE) then lets the group go on without a drain.
  const parsed = lifecycleEventSchema.parse(event);
  const outcome = await drainNode(
    {
      db,
      nodeTtlMs: env.NODE_TTL_SECONDS * 1000,
      logger,
      pollMs: env.NODE_DRAIN_POLL_SECONDS * 1000,
      completeLifecycleAction: async (action, signal) => {
        await autoscaling.send(new CompleteLifecycleActionCommand(action), { abortSignal: signal });
      },
    },
    parsed,
    AbortSignal.timeout(env.NODE_DRAIN_BUDGET_SECONDS * 1000),
  );
  return { node_id: parsed.detail.EC2InstanceId, outcome };
}
