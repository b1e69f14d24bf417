import { z } from "@hono/zod-openapi";
import { networkPolicySchema } from "../network/network-policy.ts";
import { timestampSchema, uidSchema } from "./common.ts";

/** `GET/PUT /v1/admin/users/{uid}/network` (docs/api.md "Network policy and secrets"). */
export const adminNetworkPolicySchema = z
  .object({
    uid: uidSchema,
    policy: networkPolicySchema,
    source: z
      .enum(["user", "default"])
      .describe("`user`: an admin set it; `default`: the deployment's default applies."),
  })
  .openapi("AdminNetworkPolicy")
  .describe("A user's network ceiling.");

/** `GET /v1/network`. */
export const effectiveNetworkSchema = z
  .object({
    policy: networkPolicySchema,
    changed_by: z
      .literal("admin")
      .describe("Who can change it: an admin (PUT /v1/admin/users/{uid}/network)."),
  })
  .openapi("EffectiveNetworkPolicy")
  .describe("The caller's network policy in force (runs may narrow it, never widen it).");

export const networkRequestSchema = z
  .object({
    host: z.string().describe("The host the sandbox asked for, as it named it."),
    port: z.number().int().describe("The port it asked for."),
    address: z
      .string()
      .nullable()
      .describe("The address it resolved to (connected to when allowed); null if unresolved."),
    protocol: z.enum(["http", "connect", "socks5"]).describe("How the sandbox asked."),
    decision: z.enum(["allowed", "denied"]).describe("Whether the proxy let it through."),
    reason: z
      .string()
      .nullable()
      .describe("Why it was refused (or why an allowed connection was cut), else null."),
    bytes_up: z.number().int().nonnegative().describe("Bytes from the sandbox to the host."),
    bytes_down: z.number().int().nonnegative().describe("Bytes from the host to the sandbox."),
    duration_ms: z.number().int().nonnegative().describe("How long the connection lasted."),
    started_at: timestampSchema,
  })
  .openapi("NetworkRequest")
  .describe("One connection a run's sandbox asked the egress proxy for.");

export const runNetworkListSchema = z
  .object({
    items: z.array(networkRequestSchema).describe("Oldest first."),
    truncated: z
      .boolean()
      .describe("True when the run made more connections than are kept; the rest were counted."),
  })
  .openapi("RunNetworkList")
  .describe("The connections of a run.");

export type NetworkRequest = z.output<typeof networkRequestSchema>;
