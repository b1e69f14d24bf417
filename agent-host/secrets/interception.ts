import type { SecureContext } from "node:tls";
import type { LeafIssuer } from "./leaf-certificates.ts";

/** The node's TLS termination towards bound hosts (decision 0133). */
export type Interception = {
  readonly issuer: LeafIssuer;
  /**
   * What upstream certificates are verified against: the system's trust (+ a test CA),
   * parsed once (a context per connection would parse every root again).
   */
  readonly upstreamContext: SecureContext;
};
