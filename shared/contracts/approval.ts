import { z } from "@hono/zod-openapi";
import { listOf, timestampSchema, uidSchema, uuidSchema } from "./common.ts";

export const APPROVAL_KINDS = ["tool", "network"] as const;
export const APPROVAL_STATUSES = ["pending", "approved", "denied", "expired"] as const;
export const APPROVAL_SCOPES = ["once", "run"] as const;

/** Longest note a person may leave with a decision. */
export const MAX_APPROVAL_NOTE_CHARS = 2000;
/** Longest an approval may wait (a week), and the shortest (10 s). */
export const MAX_APPROVAL_TIMEOUT_SECONDS = 7 * 24 * 3600;
export const MIN_APPROVAL_TIMEOUT_SECONDS = 10;
/** Most tool names one policy lists. */
export const MAX_APPROVAL_TOOLS = 64;

const toolNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,63}$/)
  .describe("A tool name, e.g. `bash`.");

/** `agent.approvals` of a run (docs/api.md "Runs"). */
export const runApprovalOptionsSchema = z
  .object({
    tools: z
      .union([z.literal("all"), z.array(toolNameSchema).max(MAX_APPROVAL_TOOLS)])
      .optional()
      .describe("Tool calls that wait for a person: a list of tool names, or `all`."),
    network: z
      .boolean()
      .optional()
      .describe(
        "A host the user's policy allows but the run's `network.allow` leaves out asks instead of being refused: the proxy holds that one connection until a person decides (never for always-denied addresses).",
      ),
    timeout_seconds: z
      .number()
      .int()
      .min(MIN_APPROVAL_TIMEOUT_SECONDS)
      .max(MAX_APPROVAL_TIMEOUT_SECONDS)
      .optional()
      .describe(
        "How long a request waits before it expires as a denial (default: the deployment's; never longer than the user's admin policy allows).",
      ),
  })
  .strict()
  .describe("Which of the run's actions wait for a person's decision.");

export type RunApprovalOptions = z.infer<typeof runApprovalOptionsSchema>;

export const approvalSchema = z
  .object({
    approval_id: uuidSchema.describe("Approval id."),
    run_id: uuidSchema.describe("The run that waits."),
    kind: z.enum(APPROVAL_KINDS).describe("`tool`: a tool call; `network`: a connection."),
    status: z.enum(APPROVAL_STATUSES).describe("pending → approved | denied | expired."),
    tool: z.string().optional().describe("The tool the agent wants to call."),
    arguments: z
      .unknown()
      .optional()
      .describe("The call's exact arguments (JSON), what an approval lets run."),
    host: z.string().optional().describe("The host asked for (network)."),
    port: z.number().int().optional().describe("The port asked for (network)."),
    requested_at: timestampSchema.describe("When the run asked."),
    expires_at: timestampSchema.describe("When a pending approval expires (a denial)."),
    decided_at: timestampSchema.optional().describe("When it was decided or expired."),
    decided_by: z.string().optional().describe("Who decided (a uid)."),
    note: z.string().optional().describe("The decider's note."),
    scope: z
      .enum(APPROVAL_SCOPES)
      .optional()
      .describe("An approval's reach: this call (`once`) or the tool for the rest of the run."),
  })
  .openapi("Approval")
  .describe("One action of a run that waits (or waited) for a person.");

export type ApprovalBody = z.infer<typeof approvalSchema>;

export const approvalListSchema = listOf(approvalSchema)
  .openapi("ApprovalList")
  .describe("A run's approvals, oldest first.");

/** `POST /v1/runs/{run_id}/approvals/{approval_id}` */
export const approvalDecisionSchema = z
  .object({
    decision: z.enum(["approve", "deny"]).describe("Let the action run, or refuse it."),
    scope: z
      .enum(APPROVAL_SCOPES)
      .optional()
      .describe("`run`: approve the same tool for the rest of the run (default `once`)."),
    note: z
      .string()
      .max(MAX_APPROVAL_NOTE_CHARS)
      .optional()
      .describe("Shown to the agent with a denial, and kept with the decision."),
  })
  .strict()
  .openapi("ApprovalDecision")
  .describe("A person's decision on a pending approval.");

export type ApprovalDecision = z.infer<typeof approvalDecisionSchema>;

export const approvalParamsSchema = z.object({
  run_id: uuidSchema.describe("Run id."),
  approval_id: uuidSchema.describe("Approval id."),
});

/** `GET/PUT /v1/admin/users/{uid}/approvals`: a floor runs cannot loosen. */
export const userApprovalPolicySchema = z
  .object({
    tools: z
      .union([z.literal("all"), z.array(toolNameSchema).max(MAX_APPROVAL_TOOLS)])
      .describe("Tools whose calls always ask, whatever the run says."),
    max_timeout_seconds: z
      .number()
      .int()
      .min(MIN_APPROVAL_TIMEOUT_SECONDS)
      .max(MAX_APPROVAL_TIMEOUT_SECONDS)
      .nullable()
      .describe("The longest any of the user's approvals waits; null: the deployment's."),
  })
  .strict()
  .openapi("UserApprovalPolicy")
  .describe("An admin's approval policy for one user.");

export const adminApprovalPolicySchema = z
  .object({ uid: uidSchema, policy: userApprovalPolicySchema })
  .openapi("AdminApprovalPolicy")
  .describe("A user's approval policy.");
