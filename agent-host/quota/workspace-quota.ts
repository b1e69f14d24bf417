import { join } from "node:path";
import type { WorkspaceQuota as QuotaClaim } from "../../shared/capability/capability-claims.ts";
import { WorkcellError } from "../../shared/errors/index.ts";
import { DEFAULT_USER_LIMITS } from "../../shared/limits/user-limits.ts";
import { uidDirname } from "../../shared/paths/index.ts";
import { USERS_DIR, WORKSPACE_DIR } from "../workspace/user-workspaces.ts";
import { measureWorkspaceUsage, type WorkspaceUsage } from "./workspace-usage.ts";

/** How the node enforces UserWorkspace quotas (reported per node; docs/decisions/0017). */
export type QuotaEnforcementMode = "accounting";

/** Room held for one write while it runs; settle it with what was really written. */
export interface QuotaReservation {
  /** Bytes this write may still add (the bound while streaming). */
  readonly remainingBytes: number;
  /** Records what the write added (0 when it failed) and frees the reservation. */
  settle(added: WorkspaceUsage): void;
}

export interface WorkspaceQuotaAccounting {
  readonly mode: QuotaEnforcementMode;
  /**
   * Admits a write of `incoming` into `uid`'s UserWorkspace under `quota` (the
   * capability's claim; absent: the deployment defaults), or throws `quota_exceeded`
   * before anything is written. `incoming.bytes` may be 0 for a body of unknown length:
   * the returned `remainingBytes` then bounds it while streaming.
   */
  reserve(
    uid: string,
    quota: QuotaClaim | undefined,
    incoming: WorkspaceUsage,
    signal: AbortSignal,
  ): Promise<QuotaReservation>;
  /** The usage as this node last measured it, plus what it wrote since. */
  usage(uid: string, signal: AbortSignal): Promise<WorkspaceUsage>;
  /**
   * Adds what something other than a data-plane write added (a sandbox command, as its
   * Workdir scans saw it) to the current figure, until the next measurement; nothing when
   * `uid` has no figure yet (its first measurement sees it).
   */
  record(uid: string, added: WorkspaceUsage): void;
  /** Makes the next `usage`/`reserve` measure again (something wrote an unknown amount). */
  markStale(uid: string): void;
}

export type AccountingQuotaOptions = {
  readonly dataRoot: string;
  /**
   * A measurement is reused this long; writes by this node are added to it meanwhile.
   * Bounds how long bytes written by a sandbox or another node go unseen (a write may
   * pass the quota by at most what they wrote in that window).
   */
  readonly maxUsageAgeMs?: number;
  readonly now?: () => number;
};

export const DEFAULT_MAX_USAGE_AGE_MS = 5_000;

/**
 * One uid's figures. `settled` lists the writes this node finished, with when: a new
 * measurement keeps those that finished after its walk started (the walk may have missed
 * them; counting one twice until the next measurement errs on the safe side).
 */
type Entry = {
  measured: WorkspaceUsage;
  measuredAt: number;
  settled: Array<{ at: number; bytes: number; inodes: number }>;
  reserved: Mutable;
};
type Mutable = { bytes: number; inodes: number };

/**
 * The weaker mode, for a data root without filesystem quotas: this node measures each
 * UserWorkspace (a no-follow walk, cached for maxUsageAgeMs) and refuses any data-plane
 * write that would take it over its quota. In-flight writes hold reservations, so two
 * concurrent uploads cannot both take the last free bytes. Commands in the sandbox are
 * stopped once the workspace is over (command-quota-watch.ts, decision 0143), and the run
 * worker refuses new runs and commands once over (run-quota-gate.ts).
 */
export function createAccountingQuota(options: AccountingQuotaOptions): WorkspaceQuotaAccounting {
  const maxAgeMs = options.maxUsageAgeMs ?? DEFAULT_MAX_USAGE_AGE_MS;
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();

  const entryFor = async (uid: string, signal: AbortSignal): Promise<Entry> => {
    const cached = entries.get(uid);
    if (cached !== undefined && now() - cached.measuredAt < maxAgeMs) return cached;
    const root = join(options.dataRoot, USERS_DIR, uidDirname(uid), WORKSPACE_DIR);
    const measuredAt = now();
    const measured = await measureWorkspaceUsage(root, signal);
    // Read again after the await: a concurrent write may have reserved room meanwhile, and
    // reservations survive a re-measurement (their writes are still running).
    const latest = entries.get(uid);
    if (latest !== undefined && latest.measuredAt > measuredAt) return latest;
    const entry: Entry = {
      measured,
      measuredAt,
      settled: (latest?.settled ?? []).filter((s) => s.at >= measuredAt),
      reserved: latest?.reserved ?? { bytes: 0, inodes: 0 },
    };
    entries.set(uid, entry);
    return entry;
  };

  const added = (e: Entry): Mutable => ({
    bytes: e.settled.reduce((sum, s) => sum + s.bytes, 0),
    inodes: e.settled.reduce((sum, s) => sum + s.inodes, 0),
  });
  const used = (e: Entry): Mutable => {
    const a = added(e);
    return {
      bytes: e.measured.bytes + a.bytes + e.reserved.bytes,
      inodes: e.measured.inodes + a.inodes + e.reserved.inodes,
    };
  };

  return {
    mode: "accounting",
    async reserve(uid, quota, incoming, signal) {
      const limit = quota ?? {
        workspace_bytes: DEFAULT_USER_LIMITS.workspace_bytes,
        workspace_inodes: DEFAULT_USER_LIMITS.workspace_inodes,
      };
      const entry = await entryFor(uid, signal);
      const inUse = used(entry);
      if (
        inUse.bytes + incoming.bytes > limit.workspace_bytes ||
        inUse.inodes + incoming.inodes > limit.workspace_inodes
      ) {
        throw quotaExceeded(limit, inUse, incoming);
      }
      const remainingBytes = limit.workspace_bytes - inUse.bytes;
      // Hold the whole remaining room for a body of unknown length, the declared size else.
      const held = {
        bytes: incoming.bytes > 0 ? incoming.bytes : remainingBytes,
        inodes: incoming.inodes,
      };
      entry.reserved.bytes += held.bytes;
      entry.reserved.inodes += held.inodes;
      let settled = false;
      return {
        remainingBytes,
        settle(written) {
          if (settled) return;
          settled = true;
          const current = entries.get(uid) ?? entry;
          current.reserved.bytes -= held.bytes;
          current.reserved.inodes -= held.inodes;
          current.settled.push({ at: now(), bytes: written.bytes, inodes: written.inodes });
        },
      };
    },
    async usage(uid, signal) {
      const entry = await entryFor(uid, signal);
      const a = added(entry);
      return { bytes: entry.measured.bytes + a.bytes, inodes: entry.measured.inodes + a.inodes };
    },
    record(uid, grew) {
      if (grew.bytes === 0 && grew.inodes === 0) return;
      entries.get(uid)?.settled.push({ at: now(), bytes: grew.bytes, inodes: grew.inodes });
    },
    markStale(uid) {
      const entry = entries.get(uid);
      // The entry stays (its reservations belong to writes still running); only its age goes.
      if (entry !== undefined) entry.measuredAt = Number.NEGATIVE_INFINITY;
    },
  };
}

export function quotaExceeded(
  limit: QuotaClaim,
  used: WorkspaceUsage,
  incoming: WorkspaceUsage,
): WorkcellError {
  return new WorkcellError(
    "quota_exceeded",
    "This write would take your workspace over its quota: delete files you no longer need, or ask an administrator to raise your limits.",
    {
      details: {
        reason: "workspace_quota",
        workspace_bytes: used.bytes,
        workspace_inodes: used.inodes,
        limit_bytes: limit.workspace_bytes,
        limit_inodes: limit.workspace_inodes,
        incoming_bytes: incoming.bytes,
      },
    },
  );
}
