import { z } from "@hono/zod-openapi";

export const HEALTH_STATES = ["ok", "down"] as const;

const componentSchema = z.enum(HEALTH_STATES);

export const healthzBodySchema = z
  .object({
    status: z
      .enum(HEALTH_STATES)
      .describe("`ok` when every component is ok (HTTP 200), else `down` (HTTP 503)."),
    components: z
      .object({
        db: componentSchema.describe("Postgres answers a query."),
        queue: componentSchema.describe("The run queue is reachable."),
        storage: componentSchema.describe("The attachments bucket is reachable."),
      })
      .describe("State of each dependency."),
  })
  .openapi("Health")
  .describe("Health of the API and its dependencies.");

export type HealthzBody = z.infer<typeof healthzBodySchema>;
