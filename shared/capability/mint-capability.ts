import { normalizeWorkdirPath } from "../paths/normalize-workdir-path.ts";
import {
  CAPABILITY_TOKEN_TYPE,
  type CapabilityClaims,
  capabilityClaimsSchema,
  type WorkspaceQuota,
} from "./capability-claims.ts";
import type { CapabilityOp } from "./capability-ops.ts";
import {
  type MintCapabilityJwtOptions,
  type MintedCapabilityJwt,
  mintCapabilityJwt,
} from "./mint-capability-jwt.ts";

export interface MintCapabilityOptions extends MintCapabilityJwtOptions {
  readonly uid: string;
  /** Any accepted spelling; the token carries the canonical form (normalizeWorkdirPath). */
  readonly workdirPath: string;
  readonly ops: readonly CapabilityOp[];
  /** The uid's UserWorkspace quota, enforced by the data plane on every write. */
  readonly quota?: WorkspaceQuota;
  /** The thread it is handed out for: revoked when that thread is deleted (decision 0051). */
  readonly threadId?: string;
}

export type MintedCapability = MintedCapabilityJwt<CapabilityClaims>;

/**
 * Signs a capability for the data plane (docs/architecture.md §1): functions/ has decided that
 * `uid` may do `ops` on `workdirPath`, and this expresses the decision as a short-lived
 * EdDSA JWT. Bad input (a malformed Workdir path, no ops, a TTL out of bounds) is a
 * programming error of the caller and throws; it never yields a broader token.
 */
export async function mintCapability(options: MintCapabilityOptions): Promise<MintedCapability> {
  return mintCapabilityJwt(options, CAPABILITY_TOKEN_TYPE, (registered) =>
    // Validated with the same schema the verifier uses, so nothing is minted that the data
    // plane would refuse (and a bad path throws here, at the caller's bug).
    capabilityClaimsSchema.parse({
      uid: options.uid,
      workdir_path: normalizeWorkdirPath(options.workdirPath),
      ops: [...options.ops],
      ...(options.threadId === undefined ? {} : { thread_id: options.threadId }),
      ...(options.quota === undefined ? {} : { quota: { ...options.quota } }),
      ...registered,
    }),
  );
}
