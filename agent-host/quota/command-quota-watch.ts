import { setTimeout as sleep } from "node:timers/promises";
import type { WorkspaceQuota } from "../../shared/capability/capability-claims.ts";
import { WorkcellError } from "../../shared/errors/workcell-error.ts";
import type { WorkspaceUsage } from "./workspace-usage.ts";

/**
 * The overrun a sandbox command may add past its uid's quota in the accounting mode
 * (issue 37 item 2, decision 0143): 64 MiB or 10 % of the quota, whichever is larger.
 */
export const OVERRUN_FLOOR_BYTES = 64 * 1024 * 1024;
export const OVERRUN_SHARE = 0.1;
/**
 * The write rate the watch plans for far from the quota: it looks again only when a
 * command writing this fast could have reached it, so a workspace is not walked every
 * tick for commands that write little. Measured on this kind of node: 430 MB/s to disk.
 */
export const PLANNED_WRITE_BYTES_PER_SECOND = 1024 * 1024 * 1024;
/**
 * The rate the watch plans the bound for: one writer into the page cache of a node with
 * free memory. Measured in a sandbox here: `dd` wrote 68 MiB in 28 ms, and 69 MiB in
 * 12 ms (5.8 GB/s) right after the page cache was dropped (decision 0189).
 */
export const BURST_WRITE_BYTES_PER_SECOND = 8 * 1024 * 1024 * 1024;
/**
 * What a stop takes after the look that finds the workspace over its quota, planned: the
 * look's own time, the freeze (0–4 ms measured) and a timer's usual lateness.
 */
export const STOP_MARGIN_MS = 5;
/** Closest and farthest apart two measurements of one command's watch are. */
export const WATCH_MIN_INTERVAL_MS = 25;
export const WATCH_MAX_INTERVAL_MS = 2_000;
/**
 * Closest two looks get to keep the bound. Only quotas under 640 MiB (whose bound is the
 * 64 MiB floor) plan looks this close; a look of such a small workspace takes 0.1–2 ms.
 */
export const WATCH_FLOOR_INTERVAL_MS = 2;
/** A walk may use at most 1/this of the watch's time (its cost on a large workspace). */
const WALK_SHARE = 3;

export function overrunBoundBytes(quota: WorkspaceQuota): number {
  return Math.max(OVERRUN_FLOOR_BYTES, Math.floor(quota.workspace_bytes * OVERRUN_SHARE));
}

export interface CommandQuotaWatchDeps {
  /** A fresh walk of the uid's UserWorkspace (not a cached figure). */
  readonly measure: (signal: AbortSignal) => Promise<WorkspaceUsage>;
  readonly quota: WorkspaceQuota;
  /** Called once, when the workspace is over its quota while the command runs. */
  readonly over: (stop: WorkcellError) => void;
  /** Aborted when the command has ended: the watch stops. */
  readonly signal: AbortSignal;
}

/**
 * Watches a running command's UserWorkspace and calls `over` as soon as it is past its
 * quota (bytes or inodes), so the command is stopped there instead of at its end. The
 * next look is planned by `nextLookInMs`: near the quota every few milliseconds, far from
 * it rarely. A failed walk is retried at the next look (the command is not stopped for
 * it: the lease statement checked the quota before it started). Never rejects.
 */
export async function watchCommandQuota(deps: CommandQuotaWatchDeps): Promise<void> {
  const { quota, signal } = deps;
  while (!signal.aborted) {
    const started = performance.now();
    let used: WorkspaceUsage | undefined;
    try {
      used = await deps.measure(signal);
    } catch {
      used = undefined;
    }
    if (signal.aborted) return;
    const walkMs = performance.now() - started;
    if (
      used !== undefined &&
      (used.bytes > quota.workspace_bytes || used.inodes > quota.workspace_inodes)
    ) {
      deps.over(stoppedOverQuota(quota, used));
      return;
    }
    const waitMs = nextLookInMs(quota, used, walkMs);
    try {
      await sleep(waitMs, undefined, { signal });
    } catch {
      return;
    }
  }
}

/**
 * When to look again after a look that found `used` (undefined: it failed, planned as at
 * the quota). The earlier of two plans (decision 0189):
 * - when a command writing PLANNED_WRITE_BYTES_PER_SECOND could reach the quota, within
 *   25 ms–2 s (so far from the quota a workspace is looked at rarely);
 * - before a writer at BURST_WRITE_BYTES_PER_SECOND could pass the overrun bound, less the
 *   stop's margin, at least WATCH_FLOOR_INTERVAL_MS: ~3 ms at the 64 MiB floor, 120 ms at
 *   a 1 GiB bound.
 * And at least WALK_SHARE walks' time away whatever both say: on a workspace whose walk is
 * slow the cost wins over the bound (decision 0143's "not a hard guarantee").
 */
export function nextLookInMs(
  quota: WorkspaceQuota,
  used: WorkspaceUsage | undefined,
  walkMs: number,
): number {
  const usedBytes = used?.bytes ?? quota.workspace_bytes;
  const msAt = (bytes: number, perSecond: number) => (bytes / perSecond) * 1000;
  const reachQuotaMs = msAt(quota.workspace_bytes - usedBytes, PLANNED_WRITE_BYTES_PER_SECOND);
  const toBound = quota.workspace_bytes + overrunBoundBytes(quota) - usedBytes;
  const passBoundMs = msAt(toBound, BURST_WRITE_BYTES_PER_SECOND) - STOP_MARGIN_MS;
  const planned = Math.min(WATCH_MAX_INTERVAL_MS, Math.max(WATCH_MIN_INTERVAL_MS, reachQuotaMs));
  return Math.max(
    walkMs * WALK_SHARE,
    Math.min(planned, Math.max(WATCH_FLOOR_INTERVAL_MS, passBoundMs)),
  );
}

/** Why a command was stopped: what the workspace holds, its limits, what to do. */
export function stoppedOverQuota(quota: WorkspaceQuota, used: WorkspaceUsage): WorkcellError {
  return new WorkcellError(
    "quota_exceeded",
    `This command was stopped: it took your workspace over its quota (${used.bytes} of ${quota.workspace_bytes} bytes, ${used.inodes} of ${quota.workspace_inodes} files and directories). What it wrote until then stays: delete files you no longer need (through the Files API), or ask an administrator to raise your limits.`,
    {
      details: {
        reason: "workspace_quota",
        stopped: true,
        workspace_bytes: used.bytes,
        workspace_inodes: used.inodes,
        limit_bytes: quota.workspace_bytes,
        limit_inodes: quota.workspace_inodes,
      },
    },
  );
}
