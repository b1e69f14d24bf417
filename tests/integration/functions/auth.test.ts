import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  createDevTokenVerifier,
  MAX_DEV_TOKEN_LIFETIME_SECONDS,
} from "../../../functions/auth/dev-token-verifier.ts";
import { createOidcTokenVerifier } from "../../../functions/auth/oidc-token-verifier.ts";
import {
  DEV_TOKEN_AUDIENCE,
  DEV_TOKEN_ISSUER,
  mintDevToken,
} from "../../../infra/local/dev-token.ts";
import type { Project } from "../../../shared/contracts/project.ts";
import {
  type ErrorJson,
  type FunctionsHarness,
  jsonOf,
  startFunctionsHarness,
} from "./support/functions-harness.ts";
import {
  type JwksServer,
  newSigningKey,
  type SigningKey,
  signToken,
  startJwksServer,
} from "./support/jwks-server.ts";

// OIDC verification against a JWKS served by a real local HTTP server: issuer, audience,
// expiry with clock skew, algorithms, key rotation through the JWKS cache, and one
// indistinguishable 401 for every failure.

const ISSUER = "https://login.example.test/";
const AUDIENCE = "workcell-api";
const SKEW_SECONDS = 60;
const now = () => Math.floor(Date.now() / 1000);

let jwks: JwksServer;
let k1: SigningKey;
let h: FunctionsHarness;

const claims = (over: Record<string, unknown> = {}) => ({
  iss: ISSUER,
  aud: AUDIENCE,
  sub: "oidc|alice",
  iat: now(),
  exp: now() + 300,
  ...over,
});

beforeAll(async () => {
  k1 = await newSigningKey("k1");
  jwks = await startJwksServer([k1]);
  h = await startFunctionsHarness({
    auth: createOidcTokenVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      jwksUrl: jwks.url,
      adminClaim: "workcell_admin",
      clockSkewSeconds: SKEW_SECONDS,
      // Rotation is picked up on the first unknown kid (production waits 30 s between refetches).
      jwksCooldownMs: 0,
    }),
  });
});
afterAll(async () => {
  await h?.close();
  await jwks?.close();
});

function get(token: string | null, path = "/v1/projects"): Promise<Response> {
  return h.call("GET", path, {
    uid: null,
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
}

describe("OIDC tokens", () => {
  test("a valid token: uid is `sub`, and it sees only its own resources", async () => {
    const alice = await signToken(k1, claims());
    const created = await h.call("POST", "/v1/projects", {
      uid: null,
      body: { name: "mine" },
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(created.status).toBe(201);
    const project = await jsonOf<Project>(created);
    const mine = await jsonOf<{ items: Project[] }>(await get(alice));
    expect(mine.items.map((p) => p.id)).toEqual([project.id]);
    const bob = await signToken(k1, claims({ sub: "oidc|bob" }));
    expect(await jsonOf<{ items: Project[] }>(await get(bob))).toEqual({ items: [] });
    expect((await get(bob, `/v1/projects/${project.id}`)).status).toBe(404);
  });

  test("clock skew: expired within the tolerance passes, beyond it fails; nbf likewise", async () => {
    expect((await get(await signToken(k1, claims({ exp: now() - 30 })))).status).toBe(200);
    expect(
      (await get(await signToken(k1, claims({ exp: now() - SKEW_SECONDS - 30 })))).status,
    ).toBe(401);
    expect((await get(await signToken(k1, claims({ nbf: now() + 30 })))).status).toBe(200);
    expect(
      (await get(await signToken(k1, claims({ nbf: now() + SKEW_SECONDS + 60 })))).status,
    ).toBe(401);
  });

  test("every refusal is the same bare 401", async () => {
    const other = await newSigningKey("k1"); // same kid, another key: a forgery
    const es = await newSigningKey("k1", "ES256");
    const noExp = claims();
    delete (noExp as Record<string, unknown>).exp;
    const tokens = [
      await signToken(k1, claims({ iss: "https://evil.example/" })),
      await signToken(k1, claims({ aud: "another-api" })),
      await signToken(k1, claims({ sub: undefined })),
      await signToken(k1, claims({ sub: "" })),
      await signToken(k1, noExp),
      await signToken(other, claims()),
      await signToken(es, claims()),
      await signToken(k1, claims(), { kid: "unknown-kid" }),
      // alg "none" and HS256 "signed" with the public key must never pass.
      `${Buffer.from('{"alg":"none"}').toString("base64url")}.${Buffer.from(JSON.stringify(claims())).toString("base64url")}.`,
      await mintDevToken("x".repeat(32), "oidc|alice"),
      "not.a.jwt",
      "x".repeat(20_000),
    ];
    const bodies = new Set<string>();
    for (const token of tokens) {
      const res = await get(token);
      expect(res.status, token.slice(0, 40)).toBe(401);
      const body = await jsonOf<ErrorJson>(res);
      expect(body.error.details).toBeUndefined();
      bodies.add(JSON.stringify(body));
    }
    bodies.add(JSON.stringify(await jsonOf<ErrorJson>(await get(null))));
    expect(bodies.size).toBe(1);
  });

  test("key rotation: a token signed with a newly published key is accepted after one refetch", async () => {
    const k2 = await newSigningKey("k2", "ES256");
    const token = await signToken(k2, claims());
    expect((await get(token)).status).toBe(401); // not published yet
    jwks.publish([k1, k2]);
    const before = jwks.fetches();
    expect((await get(token)).status).toBe(200);
    expect(jwks.fetches()).toBe(before + 1);
    // Cached now: no fetch per request.
    expect((await get(token)).status).toBe(200);
    expect(jwks.fetches()).toBe(before + 1);
    jwks.publish([k1]);
  });

  test("a key set that cannot be fetched is an outage (503), not a bad token", async () => {
    const down = await startJwksServer([k1]);
    await down.close();
    const verifier = createOidcTokenVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      jwksUrl: down.url,
    });
    await expect(
      verifier.verify(await signToken(k1, claims()), AbortSignal.timeout(5_000)),
    ).rejects.toMatchObject({
      code: "unavailable",
    });
  });

  test("admin only for a literal `true` of the configured claim", async () => {
    const verifier = createOidcTokenVerifier({
      issuer: ISSUER,
      audience: AUDIENCE,
      jwksUrl: jwks.url,
      adminClaim: "workcell_admin",
    });
    const signal = AbortSignal.timeout(5_000);
    const admin = async (value: unknown) => {
      const result = await verifier.verify(
        await signToken(k1, claims({ workcell_admin: value })),
        signal,
      );
      return result.ok && result.principal.admin;
    };
    expect(await admin(true)).toBe(true);
    expect(await admin("true")).toBe(false);
    expect(await admin(1)).toBe(false);
    expect(await admin(undefined)).toBe(false);
  });
});

describe("dev tokens (local mode)", () => {
  test("HS256 tokens of the dev secret pass; another secret, issuer or an OIDC token do not", async () => {
    const secret = "s".repeat(40);
    const verifier = createDevTokenVerifier({
      secret,
      issuer: DEV_TOKEN_ISSUER,
      audience: DEV_TOKEN_AUDIENCE,
      adminClaim: "admin",
    });
    const signal = AbortSignal.timeout(5_000);
    expect(
      await verifier.verify(await mintDevToken(secret, "alice", { admin: true }), signal),
    ).toEqual({
      ok: true,
      principal: { uid: "alice", admin: true },
    });
    expect((await verifier.verify(await mintDevToken("t".repeat(40), "alice"), signal)).ok).toBe(
      false,
    );
    expect((await verifier.verify(await signToken(k1, claims()), signal)).ok).toBe(false);
    expect(
      (await verifier.verify(await mintDevToken(secret, "alice", { ttlSeconds: -120 }), signal)).ok,
    ).toBe(false);
  });
});

describe("dev token lifetime", () => {
  const secret = "s".repeat(40);
  const verifier = createDevTokenVerifier({
    secret,
    issuer: DEV_TOKEN_ISSUER,
    audience: DEV_TOKEN_AUDIENCE,
    adminClaim: "admin",
  });
  const hs256 = (payload: Record<string, unknown>) =>
    new SignJWT(payload)
      .setProtectedHeader({ alg: "HS256" })
      .sign(new TextEncoder().encode(secret));
  const base = { sub: "alice", iss: DEV_TOKEN_ISSUER, aud: DEV_TOKEN_AUDIENCE, admin: true };

  test("a correctly signed 100-year admin token is refused; the minted 12 h one passes", async () => {
    const signal = AbortSignal.timeout(5_000);
    const century = await hs256({ ...base, iat: now(), exp: now() + 100 * 365 * 86_400 });
    expect(await verifier.verify(century, signal)).toEqual({
      ok: false,
      reason: `lifetime over ${MAX_DEV_TOKEN_LIFETIME_SECONDS} s`,
    });
    // Without iat the lifetime cannot be measured: refused too.
    expect((await verifier.verify(await hs256({ ...base, exp: now() + 60 }), signal)).ok).toBe(
      false,
    );
    // An iat in the future does not stretch the window either.
    const future = await hs256({
      ...base,
      iat: now() + 10 * 86_400,
      exp: now() + 10 * 86_400 + 60,
    });
    expect((await verifier.verify(future, signal)).ok).toBe(false);
    expect((await verifier.verify(await mintDevToken(secret, "alice"), signal)).ok).toBe(true);
  });
});
