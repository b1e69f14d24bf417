import type { UserLimits } from "@workcell/sdk";
import { formatBytes } from "../ui/format.ts";

export type LimitName = keyof UserLimits;

/** Each per-user limit as people read it (docs/api.md "Limits and usage"), in display order. */
export const LIMITS: readonly { name: LimitName; label: string; show(n: number): string }[] = [
  { name: "workspace_bytes", label: "Workspace size (bytes)", show: formatBytes },
  {
    name: "workspace_inodes",
    label: "Workspace entries (files, folders, links)",
    show: (n) => n.toLocaleString(),
  },
  { name: "max_concurrent_runs", label: "Runs at once", show: String },
  {
    name: "requests_per_minute",
    label: "API requests per minute",
    show: (n) => n.toLocaleString(),
  },
  { name: "egress_bytes_per_run", label: "Network bytes per run", show: formatBytes },
  { name: "max_checkpoints_per_thread", label: "Checkpoints kept per thread", show: String },
];
