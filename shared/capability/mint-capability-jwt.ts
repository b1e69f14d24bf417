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

/** What every capability minter takes, whatever its claims. */
export interface MintCapabilityJwtOptions {
  /** Ed25519 private JWK (CAPABILITY_PRIVATE_KEY) or an imported CryptoKey. */
  readonly privateKey: CapabilityPrivateKey;
  /** Default DEFAULT_CAPABILITY_AUDIENCE (the data plane serves both capability types). */
  readonly audience?: string;
  /** Default DEFAULT_CAPABILITY_ISSUER. */
  readonly issuer?: string;
  /** Whole seconds, MIN_CAPABILITY_TTL_SECONDS to MAX_CAPABILITY_TTL_SECONDS; default 300. */
  readonly ttlSeconds?: number;
  /** The clock (tests); default the system clock. */
  readonly now?: () => Date;
  /** Key id for the header (default: the JWK's `kid`), for audits during a key rotation. */
  readonly keyId?: string;
  readonly signal?: AbortSignal;
}

/** The registered claims every capability carries, filled in by mintCapabilityJwt. */
export interface RegisteredCapabilityClaims {
  readonly aud: string;
  readonly iss: string;
  readonly iat: number;
  readonly exp: number;
  readonly jti: string;
}

export interface MintedCapabilityJwt<Claims> {
  readonly token: string;
  readonly expiresAt: Date;
  readonly claims: Claims;
}

/**
 * The steps shared by mintCapability and mintServiceCapability: a bounded lifetime, the
 * registered claims, the fixed algorithm and the `typ` of the kind being minted. `claimsOf`
 * validates the complete claims with the verifier's own schema (so nothing is minted that
 * the data plane would refuse) and throws on the caller's bug; it never yields a broader token.
 */
export async function mintCapabilityJwt<Claims extends { readonly exp: number }>(
  options: MintCapabilityJwtOptions,
  typ: string,
  claimsOf: (registered: RegisteredCapabilityClaims) => Claims,
): Promise<MintedCapabilityJwt<Claims>> {
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
  const claims = claimsOf({
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
      typ,
      ...(keyId === undefined ? {} : { kid: keyId }),
    })
    .sign(key);
  return { token, expiresAt: new Date(claims.exp * 1000), claims };
}
