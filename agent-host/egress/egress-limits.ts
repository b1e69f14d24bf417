/** Bounds of the egress proxy (docs/architecture.md §13 "Bounded"); all overridable per proxy. */
export type EgressLimits = {
  /** Open connections per sandbox; more are closed at accept (workcell_egress_connections_total{decision="dropped"}). */
  readonly maxConnectionsPerSandbox: number;
  /** A connection with no byte either way for this long is closed. */
  readonly idleTimeoutMs: number;
  /** Dialling the checked address. */
  readonly connectTimeoutMs: number;
  /** getaddrinfo of one name. */
  readonly resolveTimeoutMs: number;
  /** Reading the user's ceiling from Postgres. */
  readonly policyTimeoutMs: number;
  /** A client's request line and headers, and the first byte of a connection. */
  readonly headersTimeoutMs: number;
};

export const DEFAULT_EGRESS_LIMITS: EgressLimits = Object.freeze({
  maxConnectionsPerSandbox: 64,
  idleTimeoutMs: 120_000,
  connectTimeoutMs: 10_000,
  resolveTimeoutMs: 5_000,
  policyTimeoutMs: 3_000,
  headersTimeoutMs: 10_000,
});
