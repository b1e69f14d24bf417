import { domainError } from "../shared/errors/domain-errors.ts";
import type { RunSandboxes } from "./runs/execute/run-sandboxes.ts";

/**
 * The sandbox seam when no isolation is available (no Docker engine answers). Every
 * acquire fails with `no_isolation_available`, so a run ends `failed` with that code:
 * Workcell never falls back to executing on the host. Nothing is ever acquired, so exec
 * destroy and keepWarm are unreachable.
 */
export function noIsolationSandboxes(reason: string): RunSandboxes {
  const refuse = async (): Promise<never> => {
    throw domainError("no_isolation_available", {
      message: `No sandbox driver is available (${reason}); start the Docker engine (scripts/ensure-system.sh) and restart the agent-host.`,
    });
  };
  return { acquire: refuse, exec: refuse, destroy: refuse, keepWarm: refuse, evictWarm: refuse };
}
