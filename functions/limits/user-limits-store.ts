import { eq } from "drizzle-orm";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { userLimits } from "../../shared/db/schema.ts";
import {
  effectiveLimits,
  type UserLimits,
  type UserLimitsOverride,
} from "../../shared/limits/user-limits.ts";

/** The admin's overrides of `uid` (an empty object when it has none). */
export async function findLimitsOverride(
  db: DbOrTransaction,
  uid: string,
): Promise<UserLimitsOverride> {
  const [row] = await db.select().from(userLimits).where(eq(userLimits.uid, uid));
  if (row === undefined) return {};
  const out: UserLimitsOverride = {};
  if (row.workspaceBytes !== null) out.workspace_bytes = row.workspaceBytes;
  if (row.workspaceInodes !== null) out.workspace_inodes = row.workspaceInodes;
  if (row.maxConcurrentRuns !== null) out.max_concurrent_runs = row.maxConcurrentRuns;
  if (row.requestsPerMinute !== null) out.requests_per_minute = row.requestsPerMinute;
  if (row.egressBytesPerRun !== null) out.egress_bytes_per_run = row.egressBytesPerRun;
  if (row.maxCheckpointsPerThread !== null) {
    out.max_checkpoints_per_thread = row.maxCheckpointsPerThread;
  }
  return out;
}

/** The limits in force for `uid`: its overrides over the deployment's defaults. */
export async function findEffectiveLimits(
  db: DbOrTransaction,
  uid: string,
  defaults: UserLimits,
): Promise<UserLimits> {
  return effectiveLimits(await findLimitsOverride(db, uid), defaults);
}

/**
 * Replaces the overrides of `uid` (PUT semantics: a field left out goes back to the
 * default). One statement, so concurrent PUTs end with one of the bodies, never a mix.
 */
export async function putLimitsOverride(
  db: DbOrTransaction,
  uid: string,
  override: UserLimitsOverride,
): Promise<void> {
  const values = {
    workspaceBytes: override.workspace_bytes ?? null,
    workspaceInodes: override.workspace_inodes ?? null,
    maxConcurrentRuns: override.max_concurrent_runs ?? null,
    requestsPerMinute: override.requests_per_minute ?? null,
    egressBytesPerRun: override.egress_bytes_per_run ?? null,
    maxCheckpointsPerThread: override.max_checkpoints_per_thread ?? null,
    updatedAt: new Date(),
  };
  await db
    .insert(userLimits)
    .values({ uid, ...values })
    .onConflictDoUpdate({ target: userLimits.uid, set: values });
}
