import { type CryptoKey, errors, generateKeyPair, importJWK, jwtVerify, SignJWT } from "jose";
import type { Ed25519PrivateJwk } from "../../shared/env/env-vars.ts";

/**
 * The `typ`, issuer and audience of an event ticket. They differ from every data-plane
 * capability's, so the data plane (which shares the signing key) refuses a ticket, and a
 * capability is never a ticket.
 */
export const EVENT_TICKET_TYP = "workcell-event-ticket+jwt";
export const EVENT_TICKET_ISSUER = "workcell-api";
export const EVENT_TICKET_AUDIENCE = "workcell-run-events";
/** docs/api.md: a ticket grants its stream "for at most an hour". */
export const MAX_EVENT_TICKET_TTL_SECONDS = 3_600;
const CLOCK_TOLERANCE_SEC = 5;
/** A ticket is a few hundred characters; anything far longer is not one of ours. */
const MAX_TICKET_CHARS = 4_096;

export type EventTicket = { readonly token: string; readonly expiresAt: Date };
export type EventTicketGrant = { readonly uid: string; readonly runId: string };
export type EventTicketCheck =
  | ({ readonly ok: true } & EventTicketGrant)
  | { readonly ok: false; readonly reason: "malformed" | "expired" | "refused" };

/**
 * Tickets for `GET /v1/runs/{id}/events?ticket=` (EventSource cannot send headers). A ticket
 * names one uid and one run; the authenticate middleware accepts it on that run's event
 * stream only (functions/middleware/event-ticket-principal.ts).
 */
export interface EventTickets {
  issue(grant: EventTicketGrant, ttlSeconds: number, signal: AbortSignal): Promise<EventTicket>;
  check(token: string, signal: AbortSignal): Promise<EventTicketCheck>;
}

export type EventTicketsOptions = {
  /**
   * CAPABILITY_PRIVATE_KEY: every instance of the deployment signs and verifies with it.
   * Without it each app makes its own key, and a ticket only works on the instance that
   * issued it: enough for tests and one-process setups, never for a scaled deployment.
   */
  privateJwk?: Ed25519PrivateJwk;
  /** The clock (tests); default the system clock. */
  now?: () => Date;
};

export function createEventTickets(options: EventTicketsOptions = {}): EventTickets {
  let keys: Promise<{ sign: CryptoKey; verify: CryptoKey }> | undefined;
  const loadKeys = () => {
    keys ??= importKeys(options.privateJwk);
    return keys;
  };
  const now = options.now ?? (() => new Date());

  return {
    async issue(grant, ttlSeconds, signal) {
      if (!Number.isInteger(ttlSeconds) || ttlSeconds < 1) {
        throw new RangeError(`ttlSeconds must be a whole number above 0, got ${ttlSeconds}.`);
      }
      const ttl = Math.min(ttlSeconds, MAX_EVENT_TICKET_TTL_SECONDS);
      const { sign } = await loadKeys();
      signal.throwIfAborted();
      const iat = Math.floor(now().getTime() / 1000);
      const token = await new SignJWT({ run_id: grant.runId })
        .setProtectedHeader({ alg: "EdDSA", typ: EVENT_TICKET_TYP })
        .setSubject(grant.uid)
        .setIssuer(EVENT_TICKET_ISSUER)
        .setAudience(EVENT_TICKET_AUDIENCE)
        .setIssuedAt(iat)
        .setExpirationTime(iat + ttl)
        .setJti(crypto.randomUUID())
        .sign(sign);
      return { token, expiresAt: new Date((iat + ttl) * 1000) };
    },

    async check(token, signal) {
      if (token.length === 0 || token.length > MAX_TICKET_CHARS) {
        return { ok: false, reason: "malformed" };
      }
      const { verify } = await loadKeys();
      signal.throwIfAborted();
      try {
        const { payload } = await jwtVerify(token, verify, {
          algorithms: ["EdDSA"],
          typ: EVENT_TICKET_TYP,
          issuer: EVENT_TICKET_ISSUER,
          audience: EVENT_TICKET_AUDIENCE,
          clockTolerance: CLOCK_TOLERANCE_SEC,
          maxTokenAge: MAX_EVENT_TICKET_TTL_SECONDS,
          requiredClaims: ["sub", "iat", "exp", "jti"],
          currentDate: now(),
        });
        const lifetime = (payload.exp ?? 0) - (payload.iat ?? 0);
        if (
          typeof payload.sub !== "string" ||
          typeof payload.run_id !== "string" ||
          lifetime > MAX_EVENT_TICKET_TTL_SECONDS
        ) {
          return { ok: false, reason: "refused" };
        }
        return { ok: true, uid: payload.sub, runId: payload.run_id };
      } catch (error) {
        if (error instanceof errors.JWTExpired) return { ok: false, reason: "expired" };
        if (error instanceof errors.JOSEError || error instanceof TypeError) {
          return { ok: false, reason: "refused" };
        }
        throw error;
      }
    },
  };
}

async function importKeys(
  jwk: Ed25519PrivateJwk | undefined,
): Promise<{ sign: CryptoKey; verify: CryptoKey }> {
  if (jwk === undefined) {
    const pair = await generateKeyPair("EdDSA", { crv: "Ed25519" });
    return { sign: pair.privateKey, verify: pair.publicKey };
  }
  const { kty, crv, x, d } = jwk;
  const sign = await importJWK({ kty, crv, x, d }, "EdDSA");
  const verify = await importJWK({ kty, crv, x }, "EdDSA");
  if (sign instanceof Uint8Array || verify instanceof Uint8Array) {
    throw new TypeError("The event-ticket key must be an Ed25519 JWK.");
  }
  return { sign, verify };
}
