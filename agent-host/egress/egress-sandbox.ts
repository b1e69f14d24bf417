import type { NetworkPolicy } from "../../shared/network/network-policy.ts";

/**
 * Who a proxy connection comes from: fixed when the sandbox's listener is opened, never
 * taken from anything the sandbox sends (docs/architecture.md §13).
 */
export type EgressSandbox = {
  readonly uid: string;
  readonly runId: string;
  /** The execution tree's sandbox (sandbox id) and its generation. */
  readonly sandboxId: string;
  readonly generation: number;
  /** The run's own narrowing (`agent.network.allow`); undefined: the user's ceiling. */
  readonly runAllow?: readonly string[];
};

/** The user's ceiling as of now (read per connection, so a change applies at the next one). */
export type CeilingSource = (uid: string, signal: AbortSignal) => Promise<NetworkPolicy>;
