import { SignJWT } from "jose";
import {
  CAPABILITY_ALGORITHM,
  DEFAULT_CAPABILITY_AUDIENCE,
  DEFAULT_CAPABILITY_ISSUER,
} from "./capability-claims.ts";
import { type CapabilityPrivateKey, toSigningKey } from "./capability-keys.ts";
import {
  DEFAULT_CAPABILITY_TTL_SECONDS,
  MAX_CAPABILITY_TTL_SECONDS,
  MIN_CAPABILITY_TTL_SECONDS,
} from "./capability-limits.ts";
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

export interface MintServiceCapabilityOptions {
  /** Ed25519 private JWK (CAPABILITY_PRIVATE_KEY) or an imported CryptoKey. */
  readonly privateKey: CapabilityPrivateKey;
  readonly ops: readonly ServiceCapabilityOp[];
  /** Required with a per-user op (skills.refresh, skills.personal), refused without one. */
  readonly uid?: string;
  /** Required with skills.import, refused without it. */
  readonly skill?: ServiceCapabilitySkillScope;
  /** Default DEFAULT_CAPABILITY_AUDIENCE (the data plane serves both capability types). */
  readonly audience?: string;
  /** Default DEFAULT_CAPABILITY_ISSUER. */
  readonly issuer?: string;
  /** Whole seconds, MIN_CAPABILITY_TTL_SECONDS to MAX_CAPABILITY_TTL_SECONDS; default 300. */
  readonly ttlSeconds?: number;
  readonly now?: () => Date;
  readonly keyId?: string;
  readonly signal?: AbortSignal;
}

export interface MintedServiceCapability {
  readonly token: string;
  readonly expiresAt: Date;
  readonly claims: ServiceCapabilityClaims;
}

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
  options.signal?.throwIfAborted();
  const ttlSeconds = options.ttlSeconds ?? DEFAULT_CAPABILITY_TTL_SECONDS;
  if (
    !Number.isInteger(ttlSeconds) ||
    ttlSeconds < MIN_CAPABILITY_TTL_SECONDS ||
    ttlSeconds > MAX_CAPABILITY_TTL_SECONDS
  ) {
    throw new RangeError(
      `ttlSeconds must be a whole number from ${MIN_CAPABILITY_TTL_SECONDS} to ${MAX_CAPABILITY_TTL_SECONDS}, got ${ttlSeconds}.`,
    );
  }
  const iat = Math.floor((options.now?.() ?? new Date()).getTime() / 1000);
  // The verifier's own schema: nothing is minted that the data plane would refuse.
  const claims = serviceCapabilityClaimsSchema.parse({
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.skill === undefined
      ? {}
      : { skill_slug: options.skill.slug, upload_key: options.skill.uploadKey }),
    ops: [...options.ops],
    aud: options.audience ?? DEFAULT_CAPABILITY_AUDIENCE,
    iss: options.issuer ?? DEFAULT_CAPABILITY_ISSUER,
    iat,
    exp: iat + ttlSeconds,
    jti: crypto.randomUUID(),
  });
  const key = await toSigningKey(options.privateKey);
  const keyId = options.keyId ?? ("kid" in options.privateKey ? options.privateKey.kid : undefined);
  options.signal?.throwIfAborted();
  const token = await new SignJWT({ ...claims })
    .setProtectedHeader({
      alg: CAPABILITY_ALGORITHM,
      typ: SERVICE_CAPABILITY_TOKEN_TYPE,
      ...(keyId === undefined ? {} : { kid: keyId }),
    })
    .sign(key);
  return { token, expiresAt: new Date(claims.exp * 1000), claims };
}
