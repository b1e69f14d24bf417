import { SANDBOX_TIER_VALUES } from "../../shared/contracts/run.ts";

/** The isolation tiers (docs/architecture.md §3 "Two isolation tiers, one contract"). */
export const SANDBOX_TIERS = SANDBOX_TIER_VALUES;
export type SandboxTier = (typeof SANDBOX_TIERS)[number];

/**
 * The order a run that names no tier is placed in (issue 37 item 5, decision 0106): the
 * process tier first. It isolates the kernel's per-uid budget (inotify instances and
 * watches, processes) per sandbox (decision 0040); the container tier cannot (every
 * container is host uid 1000 in the initial user namespace, so one tenant's container
 * holding 128 inotify instances starves all the others), and says so in its readiness.
 */
export const DEFAULT_TIER_ORDER: readonly SandboxTier[] = ["process", "container"];

/** What the container tier's readiness says of the kernel budget it cannot isolate. */
export const CONTAINER_SHARED_BUDGET =
  "kernel budget not isolated: every container is host uid 1000, sharing its inotify and process limits with all other containers (decision 0040); the process tier, which isolates it, is the default where both are ready";

/** What preflight found for one tier on this node. */
export type SandboxTierStatus = { tier: SandboxTier; ready: boolean; detail: string };

/** Process-tier sandbox ids start with this; Docker container ids are bare hex. */
export const PROCESS_ID_PREFIX = "process-";

/** The tier a sandbox id belongs to. */
export function tierOfInstanceId(instanceId: string): SandboxTier {
  return instanceId.startsWith(PROCESS_ID_PREFIX) ? "process" : "container";
}
