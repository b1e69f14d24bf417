import {
  type MintCapabilityJwtOptions,
  type MintedCapabilityJwt,
  mintCapabilityJwt,
} from "./mint-capability-jwt.ts";
import {
  SERVICE_CAPABILITY_TOKEN_TYPE,
  type ServiceCapabilityClaims,
  serviceCapabilityClaimsSchema,
} from "./service-capability-claims.ts";
import type { ServiceCapabilityOp } from "./service-capability-ops.ts";

/** The one import a `skills.import` capability allows. */
export interface ServiceCapabilitySkillScope {
  readonly slug: string;
  /** Object key of the uploaded archive (`skill-uploads/<uuid>`). */
  readonly uploadKey: string;
}

export interface MintServiceCapabilityOptions extends MintCapabilityJwtOptions {
  readonly ops: readonly ServiceCapabilityOp[];
  /** Required with a per-user op (skills.refresh, skills.personal, workspace.usage), refused without one. */
  readonly uid?: string;
  /** Required with skills.import, refused without it. */
  readonly skill?: ServiceCapabilitySkillScope;
}

export type MintedServiceCapability = MintedCapabilityJwt<ServiceCapabilityClaims>;

/**
 * Signs a service capability (docs/decisions/0011-skills-over-the-data-plane.md): the same
 * key, algorithm, audience, issuer and lifetime bounds as a Workdir capability, another
 * `typ`, and no Workdir. Bad input (no ops, a per-user op without a uid, an import without
 * its slug and key, a TTL out of bounds) is the caller's bug and throws; it never yields a
 * broader token.
 */
export async function mintServiceCapability(
  options: MintServiceCapabilityOptions,
): Promise<MintedServiceCapability> {
  return mintCapabilityJwt(options, SERVICE_CAPABILITY_TOKEN_TYPE, (registered) =>
    // The verifier's own schema: nothing is minted that the data plane would refuse.
    serviceCapabilityClaimsSchema.parse({
      ...(options.uid === undefined ? {} : { uid: options.uid }),
      ...(options.skill === undefined
        ? {}
        : { skill_slug: options.skill.slug, upload_key: options.skill.uploadKey }),
      ops: [...options.ops],
      ...registered,
    }),
  );
}
