import type { SandboxManager } from "../../sandbox/lifecycle/sandbox-manager.ts";

/**
 * The sandbox operations the run worker uses. SandboxManager is the isolating
 * implementation; noIsolationSandboxes (no engine on this node) refuses every acquire.
 */
export type RunSandboxes = Pick<
  SandboxManager,
  "acquire" | "exec" | "destroy" | "keepWarm" | "evictWarm"
>;
