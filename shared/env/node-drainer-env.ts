import { z } from "zod";
import { intVar, logLevelVar, postgresUrlVar } from "./env-vars.ts";
import { nodeTtlEnv } from "./liveness-env.ts";

/** A Lambda lives at most 15 minutes; the drainer needs one of them to finish. */
export const MAX_NODE_DRAIN_BUDGET_SECONDS = 14 * 60;

/** Environment of the node drainer (functions/entry/node-drainer.ts). */
export const nodeDrainerEnvSchema = z.object({
  DATABASE_URL: postgresUrlVar().describe(
    "Postgres connection URL, e.g. postgres://user:pass@host:5432/workcell.",
  ),
  NODE_DRAIN_BUDGET_SECONDS: intVar(1, MAX_NODE_DRAIN_BUDGET_SECONDS).describe(
    "How long a quiesced node is given to finish its runs before the Auto Scaling group may end it.",
  ),
  NODE_DRAIN_POLL_SECONDS: intVar(1, 60)
    .default(5)
    .describe("Between reads of the draining node's row (default 5)."),
  AWS_REGION: z
    .string()
    .min(1)
    .optional()
    .describe("Region of the Auto Scaling group; Lambda sets it."),
  ...nodeTtlEnv,
  LOG_LEVEL: logLevelVar().describe(
    "Log level: fatal, error, warn, info (default), debug, trace or silent.",
  ),
});

export type NodeDrainerEnv = z.output<typeof nodeDrainerEnvSchema>;
