import { eq } from "drizzle-orm";
import type { Logger } from "pino";
import { abortable } from "../../shared/async/abortable.ts";
import type { WorkspaceQuota } from "../../shared/capability/capability-claims.ts";
import type { Db } from "../../shared/db/client.ts";
import { userLimits } from "../../shared/db/schema.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import { DEFAULT_USER_LIMITS } from "../../shared/limits/user-limits.ts";
import { watchCommandQuota } from "./command-quota-watch.ts";
import type { WorkspaceQuotaAccounting } from "./workspace-quota.ts";
import type { WorkspaceUsage } from "./workspace-usage.ts";

/** Bound on reading a uid's limits (one primary-key SELECT). */
export const LIMITS_READ_TIMEOUT_MS = 10_000;
/** Bound on measuring a UserWorkspace for a check (a walk; reused for 5 s). */
export const USAGE_CHECK_TIMEOUT_MS = 60_000;

/**
 * The run worker's side of the accounting mode (docs/decisions/0050): no new run and no
 * next command of a uid whose UserWorkspace is over its quota. There is no filesystem quota
 * to stop a write, so a running command is watched and stopped once the workspace is over
 * (`watch`, decision 0143): it passes its quota by a bounded overrun; the next is refused.
 */
export interface RunQuotaGate {
  /**
   * Resolves when `uid` may start a run or a command; throws `quota_exceeded` (with what
   * to do) when its workspace is over its quota, `unavailable` when that could not be
   * checked (fail closed: the command does not run).
   */
  admit(uid: string, signal: AbortSignal): Promise<void>;
  /**
   * The half of `admit` that is not a statement, for a command: the uid's usage (cached)
   * and the deployment's defaults. The command's lease statement reads the uid's limits
   * and takes the lease only when `used` is within them (execution-leases.ts), so a
   * limit an admin changed is honoured by the next command in one round trip, not two.
   * Throws `unavailable` when the usage could not be measured (the command does not run).
   */
  measure(uid: string, signal: AbortSignal): Promise<QuotaAdmission>;
  /**
   * After a command: `grew` is what it added to its Workdir as the change-batch scans
   * saw it (undefined when unknown: a scan failed or was truncated, so the next check
   * measures again). Writes elsewhere in the UserWorkspace are seen by the next
   * measurement (at most the accounting's cache age later). Never throws.
   */
  settle(uid: string, grew: WorkspaceUsage | undefined): void;
  /**
   * While a command runs: measures the uid's UserWorkspace (command-quota-watch.ts) and
   * calls `over` with the error to stop it with once it is past `quota` (decision 0143).
   * With `growth` (the command's growth so far, from incremental peeks of its Workdir,
   * decision 0163) a look is the usage at the start plus what the uid's watched commands
   * have added, so its cost follows what changed, not the workspace's size; without it,
   * or when a look's growth is unknown, a look walks the UserWorkspace afresh. Resolves
   * when `signal` aborts (the command ended); never rejects.
   */
  watch(
    uid: string,
    quota: WorkspaceQuota,
    signal: AbortSignal,
    over: (stop: WorkcellError) => void,
    growth?: (signal: AbortSignal) => Promise<WorkspaceUsage | undefined>,
    /**
     * The uid's whole usage from incremental peeks of its UserWorkspace (decision 0180);
     * wins over `growth`. A look it cannot give (undefined) walks the UserWorkspace.
     */
    usage?: (signal: AbortSignal) => Promise<WorkspaceUsage | undefined>,
  ): Promise<void>;
}

/** The watched commands of one uid (see `ledgers` in createRunQuotaGate). */
type Ledger = {
  base: WorkspaceUsage | undefined;
  readonly commands: Set<{ grew: WorkspaceUsage; running: boolean }>;
  /** No command of it runs any more: it ends at the next settle. */
  closing: boolean;
};

/** What a command's lease statement compares against the uid's user_limits row. */
export interface QuotaAdmission {
  readonly used: WorkspaceUsage;
  /** The quota of a uid whose row (or column) is absent. */
  readonly defaults: WorkspaceQuota;
}

export type RunQuotaGateDeps = {
  readonly db: Db;
  /** The node's accounting, shared with the data plane so both see each other's writes. */
  readonly accounting: WorkspaceQuotaAccounting;
  /** The quota of a uid without an admin override (the deployment's defaults). */
  readonly defaults?: WorkspaceQuota;
  readonly logger: Logger;
};

export function createRunQuotaGate(deps: RunQuotaGateDeps): RunQuotaGate {
  const defaults = deps.defaults ?? {
    workspace_bytes: DEFAULT_USER_LIMITS.workspace_bytes,
    workspace_inodes: DEFAULT_USER_LIMITS.workspace_inodes,
  };
  const quotaOf = async (uid: string, signal: AbortSignal): Promise<WorkspaceQuota> => {
    const [row] = await abortable(
      deps.db
        .select({ bytes: userLimits.workspaceBytes, inodes: userLimits.workspaceInodes })
        .from(userLimits)
        .where(eq(userLimits.uid, uid))
        // Every run reads it: a named statement (decision 0183).
        .prepare("workspace_quota_of")
        .execute(),
      AbortSignal.any([signal, AbortSignal.timeout(LIMITS_READ_TIMEOUT_MS)]),
      "the user's limits",
    );
    return {
      workspace_bytes: row?.bytes ?? defaults.workspace_bytes,
      workspace_inodes: row?.inodes ?? defaults.workspace_inodes,
    };
  };
  // Per uid while it has watched commands: the usage when the first began and the growth
  // of each since, ended ones too until settled, so a look counts every command of the uid
  // (other Workdirs share the quota) without counting one twice (decision 0163).
  const ledgers = new Map<string, Ledger>();
  const unavailable = (error: unknown, uid: string): WorkcellError => {
    deps.logger.warn({ err: error, uid }, "workspace quota check failed");
    return new WorkcellError(
      "unavailable",
      "Your workspace usage could not be checked, so nothing was run: retry; if it persists, report it to the operator.",
      // Kept so the run worker can tell a database blip (hand the run back) from the rest.
      { cause: error },
    );
  };
  return {
    async measure(uid, signal) {
      try {
        const used = await deps.accounting.usage(
          uid,
          AbortSignal.any([signal, AbortSignal.timeout(USAGE_CHECK_TIMEOUT_MS)]),
        );
        return { used, defaults };
      } catch (error) {
        signal.throwIfAborted();
        throw unavailable(error, uid);
      }
    },
    async admit(uid, signal) {
      let quota: WorkspaceQuota;
      let used: WorkspaceUsage;
      try {
        [quota, used] = await Promise.all([
          quotaOf(uid, signal),
          deps.accounting.usage(
            uid,
            AbortSignal.any([signal, AbortSignal.timeout(USAGE_CHECK_TIMEOUT_MS)]),
          ),
        ]);
      } catch (error) {
        signal.throwIfAborted();
        throw unavailable(error, uid);
      }
      if (used.bytes > quota.workspace_bytes || used.inodes > quota.workspace_inodes) {
        throw overQuota(quota, used);
      }
    },
    settle(uid, grew) {
      if (grew === undefined) deps.accounting.markStale(uid);
      else deps.accounting.record(uid, grew);
      // The ended commands' growth is in the accounting's figure now.
      if (ledgers.get(uid)?.closing) ledgers.delete(uid);
    },
    watch(uid, quota, signal, over, growth, usage) {
      // A fresh walk, which also refreshes the node's figure the data plane uses.
      const walk = (s: AbortSignal) => {
        deps.accounting.markStale(uid);
        return deps.accounting.usage(uid, s);
      };
      if (usage !== undefined) {
        const measure = async (s: AbortSignal) => (await usage(s)) ?? walk(s);
        return watchCommandQuota({ measure, quota, over, signal });
      }
      if (growth === undefined) return watchCommandQuota({ measure: walk, quota, over, signal });
      const ledger = ledgers.get(uid) ?? { base: undefined, commands: new Set(), closing: false };
      ledgers.set(uid, ledger);
      ledger.closing = false;
      const mine = { grew: { bytes: 0, inodes: 0 }, running: true };
      ledger.commands.add(mine);
      const measure = async (s: AbortSignal): Promise<WorkspaceUsage> => {
        // The figure when the ledger opened (cached; a walk only if it has aged out).
        ledger.base ??= await deps.accounting.usage(uid, s);
        const grew = await growth(s);
        if (grew === undefined) return walk(s);
        mine.grew = grew;
        let { bytes, inodes } = ledger.base;
        for (const command of ledger.commands) {
          bytes += command.grew.bytes;
          inodes += command.grew.inodes;
        }
        return { bytes, inodes };
      };
      return watchCommandQuota({ measure, quota, over, signal }).finally(() => {
        // What it wrote stays counted until it is settled into the accounting's figure.
        mine.running = false;
        ledger.closing = ![...ledger.commands].some((c) => c.running);
      });
    },
  };
}

/** A uid over its quota: what it uses, its limits, and what to do about it. */
export function overQuota(quota: WorkspaceQuota, used: WorkspaceUsage): WorkcellError {
  return new WorkcellError(
    "quota_exceeded",
    `Your workspace is over its quota (${used.bytes} of ${quota.workspace_bytes} bytes, ${used.inodes} of ${quota.workspace_inodes} files and directories), so no command or run can start: delete files you no longer need (through the Files API), or ask an administrator to raise your limits.`,
    {
      details: {
        reason: "workspace_quota",
        workspace_bytes: used.bytes,
        workspace_inodes: used.inodes,
        limit_bytes: quota.workspace_bytes,
        limit_inodes: quota.workspace_inodes,
      },
    },
  );
}
