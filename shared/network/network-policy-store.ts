import { eq } from "drizzle-orm";
import type { DbOrTransaction } from "../db/client.ts";
import { userNetworkPolicies } from "../db/schema.ts";
import type { NetworkPolicy } from "./network-policy.ts";

/** The admin's policy of `uid`, or undefined when it has none (the default applies). */
export async function findNetworkOverride(
  db: DbOrTransaction,
  uid: string,
): Promise<NetworkPolicy | undefined> {
  const [row] = await db
    .select({ mode: userNetworkPolicies.mode, allow: userNetworkPolicies.allow })
    .from(userNetworkPolicies)
    .where(eq(userNetworkPolicies.uid, uid));
  return row === undefined
    ? undefined
    : { mode: row.mode, allow: row.mode === "none" ? [] : row.allow };
}

/** The ceiling in force for `uid`: the admin's policy, else the deployment's default. */
export async function findNetworkCeiling(
  db: DbOrTransaction,
  uid: string,
  deploymentDefault: NetworkPolicy,
): Promise<NetworkPolicy> {
  return (await findNetworkOverride(db, uid)) ?? deploymentDefault;
}

/** Replaces the policy of `uid` in one statement (concurrent PUTs end with one of them). */
export async function putNetworkOverride(
  db: DbOrTransaction,
  uid: string,
  policy: NetworkPolicy,
): Promise<void> {
  const values = {
    mode: policy.mode,
    allow: policy.mode === "none" ? [] : [...new Set(policy.allow)],
    updatedAt: new Date(),
  };
  await db
    .insert(userNetworkPolicies)
    .values({ uid, ...values })
    .onConflictDoUpdate({ target: userNetworkPolicies.uid, set: values });
}
