import { eq, sql } from "drizzle-orm";
import type { z } from "zod";
import type { userApprovalPolicySchema } from "../../shared/contracts/approval.ts";
import type { Db } from "../../shared/db/client.ts";
import { userApprovalPolicies } from "../../shared/db/schema.ts";

export type UserApprovalPolicy = z.infer<typeof userApprovalPolicySchema>;

/** No admin policy: nothing asks unless the run says so; the deployment's wait. */
export const NO_APPROVAL_POLICY: UserApprovalPolicy = { tools: [], max_timeout_seconds: null };

export async function findApprovalPolicy(db: Db, uid: string): Promise<UserApprovalPolicy> {
  const [row] = await db
    .select()
    .from(userApprovalPolicies)
    .where(eq(userApprovalPolicies.uid, uid));
  if (row === undefined) return NO_APPROVAL_POLICY;
  return {
    tools: row.allTools ? "all" : row.tools,
    max_timeout_seconds: row.maxTimeoutSeconds,
  };
}

/** Replaces the uid's policy; the next run (or resume) of the user reads it. */
export async function putApprovalPolicy(
  db: Db,
  uid: string,
  policy: UserApprovalPolicy,
): Promise<void> {
  const values = {
    allTools: policy.tools === "all",
    tools: policy.tools === "all" ? [] : [...new Set(policy.tools)],
    maxTimeoutSeconds: policy.max_timeout_seconds,
    updatedAt: sql`now()`,
  };
  await db
    .insert(userApprovalPolicies)
    .values({ uid, ...values })
    .onConflictDoUpdate({ target: userApprovalPolicies.uid, set: values });
}
