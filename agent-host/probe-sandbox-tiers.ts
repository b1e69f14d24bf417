import type Docker from "dockerode";
import { abortable } from "../shared/async/abortable.ts";

/**
 * The sandbox tiers usable right now, as the node heartbeat and `/readyz` report them
 * (API.md "Nodes and runtimes"): `container` while the Docker engine answers a ping
 * within the signal's bound. A tier this node never had (no engine at start) is never
 * reported, even if an engine appears later: the manager was not started for it.
 */
export async function probeSandboxTiers(
  deps: { docker: Docker; container: boolean },
  signal: AbortSignal,
): Promise<string[]> {
  if (!deps.container) return [];
  try {
    // dockerode's typings omit ping's options; the wait is bounded instead.
    await abortable(deps.docker.ping(), signal);
    return ["container"];
  } catch {
    return [];
  }
}
