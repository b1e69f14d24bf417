import type { SandboxTierSet } from "./detect-sandbox-tiers.ts";
import type { SandboxTier, SandboxTierStatus } from "./sandbox-tier.ts";

/** The tier runs get by default (process when ready, else container), or none: runs are refused. */
export type SandboxDriverStatus = {
  kind: SandboxTier | "none";
  detail: string;
  tiers: SandboxTierStatus[];
};

/** The node's default tier as its preflight found it; `none` says why every tier failed. */
export function sandboxDriverStatus(tiers: SandboxTierSet): SandboxDriverStatus {
  const kind = tiers.driver.defaultTier();
  if (kind === undefined) {
    return {
      kind: "none",
      detail: tiers.statuses.map((s) => `${s.tier}: ${s.detail}`).join("; "),
      tiers: tiers.statuses,
    };
  }
  return { kind, detail: tiers.driver.status(kind).detail, tiers: tiers.statuses };
}
