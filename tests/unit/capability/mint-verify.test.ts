import { decodeJwt, decodeProtectedHeader, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import {
  CAPABILITY_TOKEN_TYPE,
  DEFAULT_CAPABILITY_AUDIENCE,
  DEFAULT_CAPABILITY_ISSUER,
  DEFAULT_CAPABILITY_TTL_SECONDS,
  grantsOp,
  importCapabilityPrivateKey,
  importCapabilityPublicKey,
  MAX_CAPABILITY_TOKEN_CHARS,
  MAX_CAPABILITY_TTL_SECONDS,
  mintCapability,
  verifyCapability,
} from "../../../shared/capability/index.ts";
import { ed25519PrivateJwkVar, ed25519PublicJwkVar } from "../../../shared/env/env-vars.ts";
import {
  at,
  expectRefused,
  registeredClaims,
  signRawCapability,
  T0,
  UID,
  unsignedToken,
  WORKDIR,
  withPayloadChanged,
} from "./capability-fixtures.ts";
import { newKeyPair, type TestKeyPair } from "./capability-keys.ts";

let keys: TestKeyPair;
let otherKeys: TestKeyPair;
beforeAll(async () => {
  keys = await newKeyPair();
  otherKeys = await newKeyPair();
});

function mint(overrides: Partial<Parameters<typeof mintCapability>[0]> = {}) {
  return mintCapability({
    privateKey: keys.privateJwk,
    uid: UID,
    workdirPath: WORKDIR,
    ops: ["read"],
    now: at(0),
    ...overrides,
  });
}

function verify(
  token: string | undefined,
  overrides: Partial<Parameters<typeof verifyCapability>[1]> = {},
) {
  return verifyCapability(token, {
    publicKey: keys.publicJwk,
    audience: DEFAULT_CAPABILITY_AUDIENCE,
    now: at(1),
    ...overrides,
  });
}

/** Signs arbitrary claims with the right key, as a misbehaving minter would. */
function signRaw(
  payload: Record<string, unknown>,
  header: Record<string, unknown> = { alg: "EdDSA", typ: CAPABILITY_TOKEN_TYPE },
): Promise<string> {
  return signRawCapability(keys.privateJwk, payload, header);
}

function validPayload(): Record<string, unknown> {
  return { uid: UID, workdir_path: WORKDIR, ops: ["read"], ...registeredClaims() };
}

describe("mintCapability", () => {
  it("signs an EdDSA JWT of type wc-capability+jwt with every claim", async () => {
    const minted = await mint({ ops: ["read", "write"] });
    expect(decodeProtectedHeader(minted.token)).toEqual({
      alg: "EdDSA",
      typ: CAPABILITY_TOKEN_TYPE,
    });
    const iat = T0.getTime() / 1000;
    expect(decodeJwt(minted.token)).toEqual({
      uid: UID,
      workdir_path: WORKDIR,
      ops: ["read", "write"],
      aud: DEFAULT_CAPABILITY_AUDIENCE,
      iss: DEFAULT_CAPABILITY_ISSUER,
      iat,
      exp: iat + DEFAULT_CAPABILITY_TTL_SECONDS,
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(minted.expiresAt.getTime()).toBe(T0.getTime() + DEFAULT_CAPABILITY_TTL_SECONDS * 1000);
    expect(minted.claims.jti).toBe(decodeJwt(minted.token).jti);
  });

  it("never carries the uid in `sub`, so it cannot pass as an identity token", async () => {
    const { token } = await mint();
    expect(decodeJwt(token).sub).toBeUndefined();
  });

  it("gives every capability its own jti", async () => {
    const [a, b] = await Promise.all([mint(), mint()]);
    expect(a?.claims.jti).not.toBe(b?.claims.jti);
  });

  it("puts the canonical Workdir path in the token", async () => {
    const minted = await mint({ workdirPath: " projects/0B9F7A1E1B2C4D3E8F90123456789ABC " });
    expect(minted.claims.workdir_path).toBe(WORKDIR);
  });

  it("takes the key id from the JWK, or from keyId", async () => {
    const withKid = { ...keys.privateJwk, kid: "k1" };
    expect(decodeProtectedHeader((await mint({ privateKey: withKid })).token).kid).toBe("k1");
    expect(decodeProtectedHeader((await mint({ keyId: "k2" })).token).kid).toBe("k2");
  });

  it.each([0, -1, 1.5, MAX_CAPABILITY_TTL_SECONDS + 1, Number.NaN])(
    "refuses ttlSeconds %s",
    async (ttlSeconds) => {
      await expect(mint({ ttlSeconds })).rejects.toThrow(RangeError);
    },
  );

  it("accepts the longest allowed ttl", async () => {
    const minted = await mint({ ttlSeconds: MAX_CAPABILITY_TTL_SECONDS });
    expect(minted.claims.exp - minted.claims.iat).toBe(MAX_CAPABILITY_TTL_SECONDS);
  });

  it.each(["", "/abs", "a/../b", "projects/not-a-uuid", "a//b", "a\\b", "http://x"])(
    "refuses the Workdir path %j",
    async (workdirPath) => {
      await expect(mint({ workdirPath })).rejects.toThrow();
    },
  );

  it("refuses no ops, a repeated op and an unknown op", async () => {
    await expect(mint({ ops: [] })).rejects.toThrow();
    await expect(mint({ ops: ["read", "read"] })).rejects.toThrow();
    // biome-ignore lint/suspicious/noExplicitAny: an op outside the type, as a JS caller could pass
    await expect(mint({ ops: ["admin" as any] })).rejects.toThrow();
  });

  it("refuses a public key as signing key, and an aborted signal", async () => {
    // biome-ignore lint/suspicious/noExplicitAny: the wrong kind of key, as a JS caller could pass
    await expect(mint({ privateKey: keys.publicJwk as any })).rejects.toThrow(TypeError);
    await expect(mint({ signal: AbortSignal.abort() })).rejects.toThrow();
  });
});

describe("verifyCapability", () => {
  it("returns the claims of a good token", async () => {
    const minted = await mint({ ops: ["write", "delete"] });
    expect(await verify(minted.token)).toEqual({ ok: true, claims: minted.claims });
  });

  it("accepts keys as JWK, as imported CryptoKey and as parsed by the env schemas", async () => {
    const { token } = await mint({
      privateKey: await importCapabilityPrivateKey(
        ed25519PrivateJwkVar().parse(JSON.stringify(keys.privateJwk)),
      ),
    });
    const fromEnv = ed25519PublicJwkVar().parse(JSON.stringify(keys.publicJwk));
    expect((await verify(token, { publicKey: fromEnv })).ok).toBe(true);
    const imported = await importCapabilityPublicKey(keys.publicJwk);
    expect((await verify(token, { publicKey: imported })).ok).toBe(true);
  });

  it("tries every key of a rotation", async () => {
    const { token } = await mint();
    const result = await verify(token, { publicKey: [otherKeys.publicJwk, keys.publicJwk] });
    expect(result.ok).toBe(true);
  });

  it("refuses a missing or empty token", async () => {
    await expectRefused(verify(undefined), "missing");
    await expectRefused(verify(""), "missing");
  });

  it("refuses garbage and over-long tokens without parsing them", async () => {
    await expectRefused(verify("not.a.jwt"), "malformed");
    await expectRefused(verify("abc"), "malformed");
    await expectRefused(verify("a".repeat(MAX_CAPABILITY_TOKEN_CHARS + 1)), "malformed");
  });

  it("refuses an expired token, within the clock tolerance it still passes", async () => {
    const { token } = await mint({ ttlSeconds: 60 });
    expect((await verify(token, { now: at(63), clockToleranceSec: 5 })).ok).toBe(true);
    await expectRefused(verify(token, { now: at(66), clockToleranceSec: 5 }), "expired");
    await expectRefused(verify(token, { now: at(61), clockToleranceSec: 0 }), "expired");
  });

  it("refuses a token issued in the future (a minter with a fast clock)", async () => {
    const { token } = await mint({ now: at(120) });
    await expectRefused(verify(token, { now: at(0) }), "not_yet_valid");
  });

  it("refuses a wrong audience and a wrong issuer", async () => {
    const { token } = await mint({ audience: "another-data-plane" });
    await expectRefused(verify(token), "wrong_audience");
    const other = await mint({ issuer: "someone-else" });
    await expectRefused(verify(other.token), "wrong_issuer");
    expect((await verify(other.token, { issuer: "someone-else" })).ok).toBe(true);
  });

  it("refuses a token signed by another key", async () => {
    const { token } = await mint({ privateKey: otherKeys.privateJwk });
    await expectRefused(verify(token), "bad_signature");
  });

  it("refuses a token whose payload was changed (uid, Workdir or ops)", async () => {
    const { token } = await mint();
    for (const change of [
      { uid: "bob" },
      { workdir_path: "elsewhere" },
      { ops: ["read", "delete"] },
    ]) {
      await expectRefused(verify(withPayloadChanged(token, change)), "bad_signature");
    }
  });

  it("refuses unsigned (alg none) and HMAC tokens", async () => {
    await expectRefused(
      verify(unsignedToken(CAPABILITY_TOKEN_TYPE, validPayload())),
      "wrong_algorithm",
    );
    // HS256 keyed with the public key's bytes: the classic algorithm-confusion attack.
    const secret = new TextEncoder().encode(keys.publicJwk.x);
    const hs = await new SignJWT(validPayload())
      .setProtectedHeader({ alg: "HS256", typ: CAPABILITY_TOKEN_TYPE })
      .sign(secret);
    await expectRefused(verify(hs), "wrong_algorithm");
  });

  it("refuses a correctly signed JWT that is not a capability (no or another typ)", async () => {
    await expectRefused(verify(await signRaw(validPayload(), { typ: "JWT" })), "wrong_type");
    await expectRefused(verify(await signRaw(validPayload(), {})), "wrong_type");
  });

  it("refuses a correctly signed token living longer than any capability may", async () => {
    const payload = validPayload();
    const iat = payload.iat as number;
    await expectRefused(
      verify(await signRaw({ ...payload, exp: iat + MAX_CAPABILITY_TTL_SECONDS + 1 })),
      "lifetime_too_long",
    );
  });

  it.each([
    ["no uid", { uid: undefined }],
    ["an empty uid", { uid: "" }],
    ["a non-canonical Workdir", { workdir_path: "projects/0B9F7A1E-1B2C-4D3E-8F90-123456789ABC" }],
    ["an escaping Workdir", { workdir_path: "../bob" }],
    ["an absolute Workdir", { workdir_path: "/etc" }],
    ["an unknown op", { ops: ["read", "admin"] }],
    ["no ops", { ops: [] }],
    ["ops not a list", { ops: "read" }],
    ["no jti", { jti: undefined }],
  ])("refuses a correctly signed token with %s", async (_, change) => {
    await expectRefused(verify(await signRaw({ ...validPayload(), ...change })), "bad_claims");
  });

  it("throws on a broken configuration rather than refusing every token", async () => {
    const { token } = await mint();
    // biome-ignore lint/suspicious/noExplicitAny: a private key where a public one belongs
    await expect(verify(token, { publicKey: keys.privateJwk as any })).rejects.toThrow(TypeError);
    await expect(verify(token, { publicKey: [] })).rejects.toThrow(TypeError);
    await expect(verify(token, { clockToleranceSec: 3600 })).rejects.toThrow(RangeError);
  });

  it("cannot be confused by a JWK whose alg says otherwise", async () => {
    const { token } = await mint({ privateKey: { ...keys.privateJwk, alg: "HS256" } });
    const result = await verify(token, { publicKey: { ...keys.publicJwk, alg: "RS256" } });
    expect(result.ok).toBe(true);
  });
});

describe("grantsOp", () => {
  it("grants listed ops, and check through read", () => {
    expect(grantsOp(["read"], "read")).toBe(true);
    expect(grantsOp(["read"], "check")).toBe(true);
    expect(grantsOp(["check"], "check")).toBe(true);
    expect(grantsOp(["check"], "read")).toBe(false);
    expect(grantsOp(["read"], "write")).toBe(false);
    expect(grantsOp(["write"], "delete")).toBe(false);
    expect(grantsOp(["materialize"], "write")).toBe(false);
  });
});
