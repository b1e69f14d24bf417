import { SignJWT } from "jose";
import { normalizeWorkdirPath } from "../paths/normalize-workdir-path.ts";
import {
  CAPABILITY_ALGORITHM,
  CAPABILITY_TOKEN_TYPE,
  type CapabilityClaims,
  capabilityClaimsSchema,
  DEFAULT_CAPABILITY_AUDIENCE,
  DEFAULT_CAPABILITY_ISSUER,
} from "./capability-claims.ts";
import { type CapabilityPrivateKey, toSigningKey } from "./capability-keys.ts";
import {
  DEFAULT_CAPABILITY_TTL_SECONDS,
  MAX_CAPABILITY_TTL_SECONDS,
  MIN_CAPABILITY_TTL_SECONDS,
} from "./capability-limits.ts";
import type { CapabilityOp } from "./capability-ops.ts";

export interface MintCapabilityOptions {
  /** Ed25519 private JWK (CAPABILITY_PRIVATE_KEY) or an imported CryptoKey. */
  readonly privateKey: CapabilityPrivateKey;
  readonly uid: string;
  /** Any accepted spelling; the token carries the canonical form (normalizeWorkdirPath). */
  readonly workdirPath: string;
  readonly ops: readonly CapabilityOp[];
  /** Default DEFAULT_CAPABILITY_AUDIENCE. */
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

export interface MintedCapability {
  readonly token: string;
  readonly expiresAt: Date;
  readonly claims: CapabilityClaims;
}

/**
 * Signs a capability for the data plane (ARCHITECTURE.md §1): functions/ has decided that
 * `uid` may do `ops` on `workdirPath`, and this expresses the decision as a short-lived
 * EdDSA JWT. Bad input (a malformed Workdir path, no ops, a TTL out of bounds) is a
 * programming error of the caller and throws; it never yields a broader token.
 */
export async function mintCapability(options: MintCapabilityOptions): Promise<MintedCapability> {
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
  // Validated with the same schema the verifier uses, so nothing is minted that the data
  // plane would refuse (and a bad path throws here, at the caller's bug).
  const claims = capabilityClaimsSchema.parse({
    uid: options.uid,
    workdir_path: normalizeWorkdirPath(options.workdirPath),
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
      typ: CAPABILITY_TOKEN_TYPE,
      ...(keyId === undefined ? {} : { kid: keyId }),
    })
    .sign(key);
  return { token, expiresAt: new Date(claims.exp * 1000), claims };
}
