import { z } from "@hono/zod-openapi";
import { ADMIN_NODE_STATES } from "./node.ts";
import { SANDBOX_TIER_VALUES } from "./run.ts";

// What each agent-host reports about its runtime (docs/api.md "Nodes and runtimes",
// `GET /v1/admin/runtime`): each sandbox tier's preflight and each Runtime Asset's
// verification. The node writes it into its `nodes` row (agent-host/node/record-node-runtime.ts);
// the control plane only reads it back.

export const runtimeAssetStatusSchema = z
  .object({
    name: z.string().describe("The asset (`bash`, `python3`, `node`, `git`, …)."),
    version: z.string().describe("Its Debian package version in this build."),
    ready: z.boolean().describe("Checksums match and the probe printed what it must."),
    reason: z.string().optional().describe("Why it is not ready."),
  })
  .openapi("RuntimeAssetStatus");

export const sandboxTierReportSchema = z
  .object({
    tier: z.enum(SANDBOX_TIER_VALUES),
    ready: z
      .boolean()
      .describe("Ready at start (preflight) and still answering at the last heartbeat."),
    detail: z.string().describe("What preflight found, or the part that is missing."),
  })
  .openapi("SandboxTierReport");

export const QUOTA_ENFORCEMENT_MODES = ["project_quota", "accounting", "unknown"] as const;

export const quotaEnforcementSchema = z
  .object({
    mode: z
      .enum(QUOTA_ENFORCEMENT_MODES)
      .describe(
        "How this node enforces UserWorkspace quotas: `project_quota` (the filesystem stops a write at the quota), `accounting` (the weaker mode: usage is measured, writes and new runs are refused once over, a running command is not stopped mid-write; decision 0047), `unknown` (the node never reported).",
      ),
    detail: z.string().describe("What detection found: the data root's mount and options."),
  })
  .openapi("QuotaEnforcement");

/** The shape stored in `nodes.runtime` (jsonb), written by the node itself. */
export const storedNodeRuntimeSchema = z.object({
  /** Absent in a report from an agent-host older than this field. */
  quota: z.object({ mode: z.enum(["project_quota", "accounting"]), detail: z.string() }).optional(),
  tiers: z.array(
    z.object({ tier: z.enum(SANDBOX_TIER_VALUES), ready: z.boolean(), detail: z.string() }),
  ),
  /** How the node copies checkpoints (issue 39); absent in a report from an older agent-host. */
  checkpoints: z.object({ mode: z.enum(["reflink", "copy"]), detail: z.string() }).optional(),
  /** The node's egress proxy (issue #34); absent in a report from an older agent-host. */
  egress: z.object({ ready: z.boolean(), detail: z.string() }).optional(),
  /** Absent while the node is still verifying its Runtime Assets. */
  assets: z
    .object({
      version: z.string(),
      assets: z.array(runtimeAssetStatusSchema),
      error: z.string().optional(),
    })
    .optional(),
});
export type StoredNodeRuntime = z.infer<typeof storedNodeRuntimeSchema>;

export const RUNTIME_ASSETS_STATES = ["verifying", "verified", "unknown"] as const;

export const adminNodeRuntimeSchema = z
  .object({
    node_id: z.string(),
    state: z.enum(ADMIN_NODE_STATES),
    heartbeat_at: z.string().describe("Last heartbeat (RFC 3339)."),
    sandbox_tiers: z.array(sandboxTierReportSchema),
    quota_enforcement: quotaEnforcementSchema,
    egress_proxy: z
      .object({
        state: z
          .enum(["ready", "not_ready", "unknown"])
          .describe(
            "`ready`: runs whose user has network get it on this node; `not_ready`: they run without (and a run that asks for network fails with network_unavailable); `unknown`: the node never reported (an agent-host older than this report).",
          ),
        detail: z.string().describe("Why not ready, or how the proxy is set up."),
      })
      .describe("The node's egress proxy (network for sandboxes)."),
    checkpoints: z
      .object({
        mode: z
          .enum(["reflink", "copy", "unknown"])
          .describe(
            "`reflink`: a checkpoint shares extents with the Workdir (FICLONE; costs metadata only); `copy`: its bytes are copied (slower, and before-run checkpoints are off by default); `unknown`: the node never reported.",
          ),
        detail: z.string(),
      })
      .describe("How the node takes checkpoints (docs/architecture.md §16)."),
    runtime_assets: z.object({
      state: z
        .enum(RUNTIME_ASSETS_STATES)
        .describe(
          "`verifying` while the node hashes and probes its assets after a start; `unknown` when the node never reported (an agent-host older than this report).",
        ),
      version: z.string().describe("The Runtime Assets build (suite and key), or `missing`."),
      error: z.string().optional().describe("Why verification itself failed."),
      assets: z.array(runtimeAssetStatusSchema),
    }),
  })
  .openapi("AdminNodeRuntime");

export const adminRuntimeListSchema = z
  .object({ items: z.array(adminNodeRuntimeSchema) })
  .openapi("AdminRuntimeList");

export type AdminNodeRuntime = z.infer<typeof adminNodeRuntimeSchema>;
