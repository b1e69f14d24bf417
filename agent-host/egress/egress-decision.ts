import { isIP } from "node:net";
import { isHostName, normalizeHost } from "../../shared/network/host-pattern.ts";
import { policyAllows } from "../../shared/network/network-policy.ts";
import type { AddressGuard } from "./address-guard.ts";
import type { CeilingSource, EgressSandbox } from "./egress-sandbox.ts";
import { resolveDestination } from "./resolve-destination.ts";

/** Why the proxy refused a connection (the `reason` of its audit row and 403 body). */
export type EgressRefusal =
  | "ip_literal"
  | "bad_host"
  | "not_in_policy"
  | "policy_unavailable"
  | "unresolved"
  | "resolve_timeout"
  | "private_address"
  | "node_address"
  | "bad_address"
  | "approval_denied"
  | "approval_expired"
  | "approval_busy"
  | "approval_unavailable";

/**
 * A person's answer for a host outside the run's narrowing (decision 0137): allowed, or a
 * refusal with the reason and what the person said ("denied by <who>: <note>").
 */
export type NetworkAnswer =
  | { readonly approved: true }
  | {
      readonly approved: false;
      readonly reason:
        | "approval_denied"
        | "approval_expired"
        | "approval_busy"
        | "approval_unavailable";
      readonly note: string;
    };

/** Asks for one connection and waits (bounded); `signal` aborts when its client goes. */
export type NetworkAsk = (
  host: string,
  port: number,
  signal: AbortSignal,
) => Promise<NetworkAnswer>;

export type EgressDecision =
  | { readonly allowed: true; readonly host: string; readonly address: string }
  | {
      readonly allowed: false;
      readonly host: string;
      readonly reason: EgressRefusal;
      readonly address: string | null;
      /** What a person said when the refusal is theirs. */
      readonly note?: string;
    };

export type EgressDecisionDeps = {
  readonly ceiling: CeilingSource;
  readonly guard: AddressGuard;
  readonly resolveTimeoutMs: number;
  /** The run's network approvals (`agent.approvals.network`); undefined: refuse, never ask. */
  readonly ask?: NetworkAsk;
};

const refuse = (host: string, reason: EgressRefusal, address: string | null = null) =>
  ({ allowed: false, host, reason, address }) as const;

/**
 * The whole policy of one connection: a name (never an IP literal: patterns are names)
 * that the user's current ceiling and the run's narrowing both allow, resolved once, every
 * answer outside the always-denied classes; the caller connects to `address` and only to it.
 * A name with one denied answer is refused whole: the proxy never picks the harmless answer
 * of a name that also points inside.
 */
export async function decideEgress(
  deps: EgressDecisionDeps,
  sandbox: EgressSandbox,
  rawHost: string,
  port: number,
  signal: AbortSignal,
): Promise<EgressDecision> {
  const host = normalizeHost(rawHost.startsWith("[") ? rawHost.slice(1, -1) : rawHost);
  if (isIP(host) !== 0) return refuse(host, "ip_literal");
  if (!isHostName(host) || !Number.isInteger(port) || port < 1 || port > 65_535)
    return refuse(host, "bad_host");
  let ceiling: Awaited<ReturnType<CeilingSource>>;
  try {
    ceiling = await deps.ceiling(sandbox.uid, signal);
  } catch {
    // Closed when the policy cannot be read: never open by default.
    return refuse(host, "policy_unavailable");
  }
  const narrowed =
    sandbox.runAllow === undefined ||
    policyAllows({ mode: "allowlist", allow: sandbox.runAllow }, host, port);
  // Outside the user's ceiling is the admin's refusal: a person's approval never widens it.
  if (!policyAllows(ceiling, host, port)) return refuse(host, "not_in_policy");
  if (!narrowed && deps.ask === undefined) return refuse(host, "not_in_policy");
  const resolved = await resolveDestination(host, deps.resolveTimeoutMs, signal);
  if (!resolved.ok) return refuse(host, resolved.reason);
  for (const address of resolved.addresses) {
    const refusal = deps.guard.refusal(address);
    if (refusal !== undefined) return refuse(host, refusal, address);
  }
  const [address] = resolved.addresses;
  if (address === undefined) return refuse(host, "unresolved");
  // Asked only once every check a person cannot override passed (always-denied never asks).
  if (!narrowed && deps.ask !== undefined) {
    const answer = await deps.ask(host, port, signal);
    if (!answer.approved) return { ...refuse(host, answer.reason, address), note: answer.note };
  }
  return { allowed: true, host, address };
}
