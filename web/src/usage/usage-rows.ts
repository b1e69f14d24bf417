import type { UsageData } from "@workcell/sdk";
import { formatBytes } from "../ui/format.ts";

/** How a measured figure stands against its limit (decision 0050: only "over" stops runs). */
export type UsageState = "ok" | "nearly" | "full" | "over";

export type UsageRow = {
  /** The field of `GET /v1/usage` the row shows (or of its `limits` when nothing is measured). */
  key: string;
  label: string;
  /** Undefined: the API does not measure it (requests per minute). */
  used?: { value: number; shown: string };
  /** Undefined: no per-user limit (queued runs are bounded by the deployment, not shown). */
  limit?: { value: number; shown: string };
  state: UsageState;
};

const count = (n: number) => n.toLocaleString();
const figure = (value: number, show: (n: number) => string) => ({ value, shown: show(value) });

/** "Nearly full" from this share of a limit on: time to clean up before runs are refused. */
const NEARLY = 0.9;

export function usageState(used: number, limit: number): UsageState {
  if (used > limit) return "over";
  if (used === limit) return "full";
  return used >= limit * NEARLY ? "nearly" : "ok";
}

/** The usage page's table, one row per figure, in the order people read it. */
export function usageRows(u: UsageData): UsageRow[] {
  const { limits } = u;
  return [
    {
      key: "workspace_bytes",
      label: "Workspace size",
      used: figure(u.workspace_bytes, formatBytes),
      limit: figure(limits.workspace_bytes, formatBytes),
      state: usageState(u.workspace_bytes, limits.workspace_bytes),
    },
    {
      key: "workspace_inodes",
      label: "Workspace entries (files, folders, links)",
      used: figure(u.workspace_inodes, count),
      limit: figure(limits.workspace_inodes, count),
      state: usageState(u.workspace_inodes, limits.workspace_inodes),
    },
    {
      key: "running_runs",
      label: "Runs running now",
      used: figure(u.running_runs, count),
      limit: figure(limits.max_concurrent_runs, count),
      // Running at the limit is not a problem: further runs wait (queued_runs).
      state: u.running_runs >= limits.max_concurrent_runs ? "full" : "ok",
    },
    {
      key: "queued_runs",
      label: "Runs waiting for a slot",
      used: figure(u.queued_runs, count),
      state: "ok",
    },
    {
      key: "requests_per_minute",
      label: "API requests per minute",
      limit: figure(limits.requests_per_minute, count),
      state: "ok",
    },
    {
      key: "egress_bytes_per_run",
      label: "Network bytes per run",
      limit: figure(limits.egress_bytes_per_run, formatBytes),
      state: "ok",
    },
    {
      key: "max_checkpoints_per_thread",
      label: "Checkpoints kept per thread",
      limit: figure(limits.max_checkpoints_per_thread, count),
      state: "ok",
    },
  ];
}

/** The share of the limit used, as a person reads it ("<1%" rather than a misleading 0%). */
export function usedShare(used: number, limit: number): string {
  if (limit === 0) return used === 0 ? "0%" : "over";
  const share = (used / limit) * 100;
  if (used > 0 && share < 1) return "<1%";
  return `${Math.floor(share)}%`;
}
