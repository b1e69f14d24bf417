import type { Interception } from "../secrets/interception.ts";
import type { SandboxSecrets } from "../secrets/sandbox-secrets.ts";
import type { EgressDecisionDeps } from "./egress-decision.ts";
import type { FlowDeps } from "./egress-flow.ts";
import type { EgressLimits } from "./egress-limits.ts";

/** What the proxy's handlers of one sandbox's listener need (HTTP, CONNECT, SOCKS). */
export type HttpProxyDeps = FlowDeps & {
  readonly decision: EgressDecisionDeps;
  readonly limits: EgressLimits;
  /** Aborted when the sandbox's listener closes: every pending decision and dial stops. */
  readonly signal: AbortSignal;
  /** The sandbox's secrets (placeholders and the swap); undefined: it has none. */
  readonly secrets?: SandboxSecrets;
  /** TLS termination towards hosts a secret binds; undefined: every CONNECT is a tunnel. */
  readonly interception?: Interception;
};
