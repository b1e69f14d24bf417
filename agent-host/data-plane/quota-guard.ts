import type { CapabilityClaims } from "../../shared/capability/capability-claims.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import { quotaExceeded, type WorkspaceQuotaAccounting } from "../quota/workspace-quota.ts";
import type { WorkspaceUsage } from "../quota/workspace-usage.ts";

export type QuotaGuarded<T> = {
  readonly incoming: WorkspaceUsage;
  /** The write itself, bounded to `maxBytes` (the smaller of its own limit and the room left). */
  readonly write: (maxBytes: number) => Promise<T>;
  /** What the finished write added. */
  readonly added: (result: T) => WorkspaceUsage;
};

/**
 * Runs one data-plane write under the UserWorkspace quota the capability carries: refused
 * with `quota_exceeded` before anything is opened when the declared size does not fit, and
 * bounded while streaming to the room left, so a body of unknown length stops at the quota
 * too (the write layer then removes its temp file: nothing partial is left). Without a
 * quota seam (a bare data plane in tests) the write runs with its own bound only.
 */
export async function writeUnderQuota<T>(
  quota: WorkspaceQuotaAccounting | undefined,
  claims: CapabilityClaims,
  ownMaxBytes: number,
  signal: AbortSignal,
  guarded: QuotaGuarded<T>,
): Promise<T> {
  if (quota === undefined) return guarded.write(ownMaxBytes);
  const reservation = await quota.reserve(claims.uid, claims.quota, guarded.incoming, signal);
  const quotaBinds = reservation.remainingBytes < ownMaxBytes;
  const maxBytes = quotaBinds ? reservation.remainingBytes : ownMaxBytes;
  let added: WorkspaceUsage = { bytes: 0, inodes: 0 };
  try {
    const result = await guarded.write(maxBytes);
    added = guarded.added(result);
    return result;
  } catch (error) {
    if (quotaBinds && error instanceof WorkcellError && error.code === "payload_too_large") {
      throw quotaExceeded(
        claims.quota ?? { workspace_bytes: Number.NaN, workspace_inodes: Number.NaN },
        await quota.usage(claims.uid, signal),
        guarded.incoming,
      );
    }
    throw error;
  } finally {
    reservation.settle(added);
  }
}
