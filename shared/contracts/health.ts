import { z } from "@hono/zod-openapi";

export const HEALTH_STATES = ["ok", "down"] as const;
export const HEALTH_STATUSES = ["ok", "degraded", "down"] as const;
export const NODES_STATES = ["ok", "none_ready"] as const;

const componentSchema = z.enum(HEALTH_STATES);

export const healthzBodySchema = z
  .object({
    status: z
      .enum(HEALTH_STATUSES)
      .describe(
        "`ok` when every component is ok (HTTP 200); `degraded` (HTTP 200) when only `nodes` is `none_ready`; `down` (HTTP 503) when a dependency is down.",
      ),
    components: z
      .object({
        db: componentSchema.describe("Postgres answers a query."),
        queue: componentSchema.describe("The run queue is reachable."),
        storage: componentSchema.describe("The attachments bucket is reachable."),
        nodes: z
          .enum(NODES_STATES)
          .describe(
            "`ok` when at least one active agent-host with a ready sandbox tier has a fresh heartbeat, else `none_ready`.",
          ),
      })
      .describe("State of each dependency."),
  })
  .openapi("Health")
  .describe("Health of the API and its dependencies.");

export type HealthzBody = z.infer<typeof healthzBodySchema>;
