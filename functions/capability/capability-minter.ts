import type { WorkspaceQuota } from "../../shared/capability/capability-claims.ts";
import type { CapabilityOp } from "../../shared/capability/capability-ops.ts";
import type { ServiceCapabilityOp } from "../../shared/capability/service-capability-ops.ts";

export type CapabilityRequest = {
  readonly uid: string;
  /** Canonical Workdir path (normalizeWorkdirPath) the capability is scoped to. */
  readonly workdirPath: string;
  readonly ops: readonly CapabilityOp[];
  /** The uid's UserWorkspace quota (its effective limits), for capabilities that write. */
  readonly quota?: WorkspaceQuota;
  /**
   * The thread a client capability is handed out for: the data plane refuses it once the
   * thread is deleted (docs/decisions/0051). Every capability given to a client names one.
   */
  readonly threadId?: string;
  /** Default: the minter's TTL (DEFAULT_CAPABILITY_TTL_SECONDS). */
  readonly ttlSeconds?: number;
};

export type MintedCapability = { readonly token: string; readonly expiresAt: Date };

/**
 * Signs data-plane capabilities (docs/architecture.md §1): functions/ decides authorization
 * from Postgres and expresses it as a short-lived EdDSA JWT the data plane verifies.
 */
export interface CapabilityMinter {
  mint(request: CapabilityRequest, signal: AbortSignal): Promise<MintedCapability>;
}

/**
 * A service capability (docs/decisions/0011-skills-over-the-data-plane.md): for the
 * control plane's own calls to the data plane that are not about a Workdir. Per-user ops
 * name the uid; an import names exactly one slug and one uploaded archive.
 */
export type ServiceCapabilityRequest = {
  readonly ops: readonly ServiceCapabilityOp[];
  /** Required with a per-user op (skills.refresh, skills.personal, workspace.usage), refused otherwise. */
  readonly uid?: string;
  /** Required with skills.import, refused otherwise. */
  readonly skill?: { readonly slug: string; readonly uploadKey: string };
  /** Default: the minter's TTL (DEFAULT_CAPABILITY_TTL_SECONDS). */
  readonly ttlSeconds?: number;
};

/**
 * Signs service capabilities. Separate from CapabilityMinter so that code (and test doubles)
 * needing only Workdir capabilities stay as they are; `createCapabilityMinter` returns both.
 */
export interface ServiceCapabilityMinter {
  mintService(request: ServiceCapabilityRequest, signal: AbortSignal): Promise<MintedCapability>;
}
