import { eq } from "drizzle-orm";
import { agentOptionsSchema } from "../../shared/contracts/run.ts";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { type AgentRun, userApprovalPolicies } from "../../shared/db/schema.ts";

/** A deployment without its own setting: a request waits a day for a person. */
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 24 * 3600;

/** Which calls of a run wait for a person, and for how long (docs/architecture.md §14). */
export interface ApprovalPolicy {
  readonly tools: "all" | ReadonlySet<string>;
  readonly timeoutSeconds: number;
}

/**
 * The run's policy: its `agent.approvals` joined with its user's admin policy, which a run
 * can add to but never loosen (the tools of both ask; the shorter wait wins). Undefined when
 * no tool of the run asks.
 */
export async function loadApprovalPolicy(
  db: DbOrTransaction,
  run: Pick<AgentRun, "uid" | "agent">,
  defaultTimeoutSeconds: number,
): Promise<ApprovalPolicy | undefined> {
  const agent = agentOptionsSchema.safeParse(run.agent);
  const own = agent.success ? agent.data.approvals : undefined;
  const [admin] = await db
    .select()
    .from(userApprovalPolicies)
    .where(eq(userApprovalPolicies.uid, run.uid));
  const all = own?.tools === "all" || admin?.allTools === true;
  const names = new Set([...(Array.isArray(own?.tools) ? own.tools : []), ...(admin?.tools ?? [])]);
  if (!all && names.size === 0) return undefined;
  const wanted = own?.timeout_seconds ?? defaultTimeoutSeconds;
  const ceiling = admin?.maxTimeoutSeconds ?? Number.POSITIVE_INFINITY;
  return { tools: all ? "all" : names, timeoutSeconds: Math.min(wanted, ceiling) };
}

/** True when `tool` asks under `policy`, unless a person approved it for the whole run. */
export function toolAsks(
  policy: ApprovalPolicy | undefined,
  tool: string,
  approvedForRun: ReadonlySet<string>,
): boolean {
  if (policy === undefined || approvedForRun.has(tool)) return false;
  return policy.tools === "all" || policy.tools.has(tool);
}
