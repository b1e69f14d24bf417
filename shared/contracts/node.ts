import { z } from "@hono/zod-openapi";

export const ADMIN_NODE_STATES = ["active", "quiesced", "lost"] as const;

export const adminNodeSchema = z
  .object({
    node_id: z.string(),
    state: z
      .enum(ADMIN_NODE_STATES)
      .describe(
        "`lost` when the node stopped or its heartbeat is older than the node TTL (whatever the operator set); else the operator's `active` / `quiesced`.",
      ),
    heartbeat_at: z.string().describe("Last heartbeat (RFC 3339)."),
    sandbox_tiers: z.array(z.string()).describe("Sandbox tiers ready at the last heartbeat."),
    live_sandboxes: z.number().int().describe("Running sandboxes at the last heartbeat."),
    running_runs: z.number().int().describe("Runs running on the node at the last heartbeat."),
  })
  .openapi("AdminNode");

export const adminNodeListSchema = z
  .object({ items: z.array(adminNodeSchema) })
  .openapi("AdminNodeList");

export const nodeIdParamSchema = z.object({
  node_id: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: "node_id", in: "path" } }),
});

export type AdminNode = z.infer<typeof adminNodeSchema>;
