/** A capability lives this long unless the minter asks for another lifetime. */
export const DEFAULT_CAPABILITY_TTL_SECONDS = 300;
/**
 * Longest lifetime a capability may have, at minting and at verification: a capability is
 * a bearer secret that cannot be revoked, so a leaked one must die quickly. A token whose
 * `exp - iat` is longer is refused even when correctly signed (a misconfigured minter).
 */
export const MAX_CAPABILITY_TTL_SECONDS = 900;
export const MIN_CAPABILITY_TTL_SECONDS = 1;
/** Clock skew tolerated between the minter (functions/) and the verifier (agent-host). */
export const DEFAULT_CAPABILITY_CLOCK_TOLERANCE_SEC = 5;
/** Largest skew a verifier may be configured to tolerate: more would extend every TTL. */
export const MAX_CAPABILITY_CLOCK_TOLERANCE_SEC = 60;
/**
 * Longest token string accepted before any parsing: ours are a few hundred bytes plus the
 * Workdir path (at most 4096 bytes), so anything longer is garbage or an attack on the parser.
 */
export const MAX_CAPABILITY_TOKEN_CHARS = 8192;
