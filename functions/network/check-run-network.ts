import type { AgentOptions } from "../../shared/contracts/run.ts";
import type { DbOrTransaction } from "../../shared/db/client.ts";
import { domainError } from "../../shared/errors/domain-errors.ts";
import { type NetworkPolicy, patternsOutside } from "../../shared/network/network-policy.ts";
import { findNetworkCeiling } from "../../shared/network/network-policy-store.ts";

/**
 * Refuses a submission whose `agent.network.allow` widens its user's ceiling (422
 * `network_not_allowed`, naming the patterns), before anything is written. A run without
 * `agent.network` costs no query: it simply takes the ceiling, read again by the egress
 * proxy at each connection, so a later narrowing of the ceiling still applies to it.
 */
export async function checkRunNetwork(
  db: DbOrTransaction,
  uid: string,
  agent: AgentOptions | undefined,
  deploymentDefault: NetworkPolicy,
): Promise<void> {
  const allow = agent?.network?.allow;
  if (allow === undefined) return;
  const ceiling = await findNetworkCeiling(db, uid, deploymentDefault);
  const outside = patternsOutside(ceiling, allow);
  if (outside.length > 0) {
    throw domainError("network_not_allowed", {
      message: `agent.network.allow names hosts outside your network policy (GET /v1/network): ${outside.join(", ")}. Remove them, or ask an admin to allow them.`,
      details: { patterns: outside },
    });
  }
}
