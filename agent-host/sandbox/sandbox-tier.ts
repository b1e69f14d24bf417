import { SANDBOX_TIER_VALUES } from "../../shared/contracts/run.ts";

/** The isolation tiers (docs/architecture.md §3 "Two isolation tiers, one contract"). */
export const SANDBOX_TIERS = SANDBOX_TIER_VALUES;
export type SandboxTier = (typeof SANDBOX_TIERS)[number];

/** What preflight found for one tier on this node. */
export type SandboxTierStatus = { tier: SandboxTier; ready: boolean; detail: string };

/** Process-tier sandbox ids start with this; Docker container ids are bare hex. */
export const PROCESS_ID_PREFIX = "process-";

/** The tier a sandbox id belongs to. */
export function tierOfContainerId(containerId: string): SandboxTier {
  return containerId.startsWith(PROCESS_ID_PREFIX) ? "process" : "container";
}
