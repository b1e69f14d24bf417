import type { CapabilityOp } from "../../shared/capability/capability-ops.ts";

export type CapabilityRequest = {
  readonly uid: string;
  /** Canonical Workdir path (normalizeWorkdirPath) the capability is scoped to. */
  readonly workdirPath: string;
  readonly ops: readonly CapabilityOp[];
  /** Default: the minter's TTL (DEFAULT_CAPABILITY_TTL_SECONDS). */
  readonly ttlSeconds?: number;
};

export type MintedCapability = { readonly token: string; readonly expiresAt: Date };

/**
 * Signs data-plane capabilities (ARCHITECTURE.md §1): functions/ decides authorization
 * from Postgres and expresses it as a short-lived EdDSA JWT the data plane verifies.
 */
export interface CapabilityMinter {
  mint(request: CapabilityRequest, signal: AbortSignal): Promise<MintedCapability>;
}
