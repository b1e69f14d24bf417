import { decodeJwt, decodeProtectedHeader } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { createCapabilityMinter } from "../../../functions/capability/create-capability-minter.ts";
import {
  CAPABILITY_TOKEN_TYPE,
  capabilityTokenType,
  DEFAULT_CAPABILITY_AUDIENCE,
  DEFAULT_CAPABILITY_ISSUER,
  DEFAULT_CAPABILITY_TTL_SECONDS,
  grantsServiceOp,
  MAX_CAPABILITY_TOKEN_CHARS,
  MAX_CAPABILITY_TTL_SECONDS,
  mintCapability,
  mintServiceCapability,
  SERVICE_CAPABILITY_TOKEN_TYPE,
  verifyCapability,
  verifyServiceCapability,
} from "../../../shared/capability/index.ts";
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

// Service capabilities (docs/decisions/0011-skills-over-the-data-plane.md): the skills
// operations of the data plane, which name no Workdir. The Workdir capability's own tests
// (mint-verify.test.ts) are unchanged; here: the new type, its scope rules, and that the
// two types never pass for each other.

const UPLOAD_KEY = "skill-uploads/6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b";

let keys: TestKeyPair;
let otherKeys: TestKeyPair;
beforeAll(async () => {
  keys = await newKeyPair();
  otherKeys = await newKeyPair();
});

type MintOptions = Parameters<typeof mintServiceCapability>[0];

function mint(overrides: Partial<MintOptions> = {}) {
  return mintServiceCapability({
    privateKey: keys.privateJwk,
    uid: UID,
    ops: ["skills.refresh"],
    now: at(0),
    ...overrides,
  });
}

function verify(
  token: string | undefined,
  overrides: Partial<Parameters<typeof verifyServiceCapability>[1]> = {},
) {
  return verifyServiceCapability(token, {
    publicKey: keys.publicJwk,
    audience: DEFAULT_CAPABILITY_AUDIENCE,
    now: at(1),
    ...overrides,
  });
}

/** Signs arbitrary claims with the right key and the service type, as a buggy minter would. */
function signRaw(
  payload: Record<string, unknown>,
  typ: string = SERVICE_CAPABILITY_TOKEN_TYPE,
): Promise<string> {
  return signRawCapability(keys.privateJwk, payload, { typ });
}

describe("mintServiceCapability", () => {
  it("signs an EdDSA JWT of its own type, with the uid and no Workdir", async () => {
    const minted = await mint({ ops: ["skills.refresh", "skills.personal"] });
    expect(decodeProtectedHeader(minted.token)).toEqual({
      alg: "EdDSA",
      typ: SERVICE_CAPABILITY_TOKEN_TYPE,
    });
    expect(SERVICE_CAPABILITY_TOKEN_TYPE).not.toBe(CAPABILITY_TOKEN_TYPE);
    const iat = T0.getTime() / 1000;
    expect(decodeJwt(minted.token)).toEqual({
      uid: UID,
      ops: ["skills.refresh", "skills.personal"],
      aud: DEFAULT_CAPABILITY_AUDIENCE,
      iss: DEFAULT_CAPABILITY_ISSUER,
      iat,
      exp: iat + DEFAULT_CAPABILITY_TTL_SECONDS,
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(decodeJwt(minted.token).sub).toBeUndefined();
    expect(minted.expiresAt.getTime()).toBe(T0.getTime() + DEFAULT_CAPABILITY_TTL_SECONDS * 1000);
  });

  it("scopes an import to one slug and one upload, with no uid", async () => {
    const minted = await mint({
      uid: undefined,
      ops: ["skills.import"],
      skill: { slug: "pdf-tools", uploadKey: UPLOAD_KEY },
    });
    expect(minted.claims).toMatchObject({ skill_slug: "pdf-tools", upload_key: UPLOAD_KEY });
    expect(minted.claims.uid).toBeUndefined();
  });

  it("refuses a per-user op without a uid, and a uid no op uses", async () => {
    await expect(mint({ uid: undefined })).rejects.toThrow(/uid/);
    await expect(mint({ uid: undefined, ops: ["skills.personal"] })).rejects.toThrow(/uid/);
    await expect(
      mint({ ops: ["skills.import"], skill: { slug: "a", uploadKey: UPLOAD_KEY } }),
    ).rejects.toThrow(/uid/);
    await expect(mint({ uid: "" })).rejects.toThrow();
  });

  it("refuses an import without its slug and key, and a skill scope no op uses", async () => {
    await expect(mint({ uid: undefined, ops: ["skills.import"] })).rejects.toThrow(/skill_slug/);
    await expect(mint({ skill: { slug: "pdf-tools", uploadKey: UPLOAD_KEY } })).rejects.toThrow(
      /skill_slug/,
    );
    await expect(
      mint({ uid: undefined, ops: ["skills.import"], skill: { slug: "", uploadKey: UPLOAD_KEY } }),
    ).rejects.toThrow();
  });

  it("refuses no ops, a repeated op, a Workdir op and an unknown op", async () => {
    await expect(mint({ ops: [] })).rejects.toThrow();
    await expect(mint({ ops: ["skills.refresh", "skills.refresh"] })).rejects.toThrow();
    // biome-ignore lint/suspicious/noExplicitAny: a Workdir op, as a JS caller could pass
    await expect(mint({ ops: ["read" as any] })).rejects.toThrow();
    // biome-ignore lint/suspicious/noExplicitAny: an op outside the type
    await expect(mint({ ops: ["skills.admin" as any] })).rejects.toThrow();
  });

  it.each([0, -1, 1.5, MAX_CAPABILITY_TTL_SECONDS + 1, Number.NaN])(
    "refuses ttlSeconds %s",
    async (ttlSeconds) => {
      await expect(mint({ ttlSeconds })).rejects.toThrow(RangeError);
    },
  );

  it("refuses a public key as signing key, and an aborted signal", async () => {
    // biome-ignore lint/suspicious/noExplicitAny: the wrong kind of key
    await expect(mint({ privateKey: keys.publicJwk as any })).rejects.toThrow(TypeError);
    await expect(mint({ signal: AbortSignal.abort() })).rejects.toThrow();
  });
});

describe("verifyServiceCapability", () => {
  it("returns the claims of a good token, with any key of a rotation", async () => {
    const minted = await mint();
    expect(await verify(minted.token)).toEqual({ ok: true, claims: minted.claims });
    expect(
      await verify(minted.token, { publicKey: [otherKeys.publicJwk, keys.publicJwk] }),
    ).toEqual({ ok: true, claims: minted.claims });
  });

  it("refuses a Workdir capability as wrong_type, and is refused by the Workdir verifier", async () => {
    const workdir = await mintCapability({
      privateKey: keys.privateJwk,
      uid: UID,
      workdirPath: WORKDIR,
      ops: ["read", "write", "delete", "check", "materialize", "import"],
      now: at(0),
    });
    await expectRefused(verify(workdir.token), "wrong_type");
    const service = await mint({ ops: ["skills.refresh", "skills.personal"] });
    expect(
      await verifyCapability(service.token, {
        publicKey: keys.publicJwk,
        audience: DEFAULT_CAPABILITY_AUDIENCE,
        now: at(1),
      }),
    ).toEqual({ ok: false, reason: "wrong_type" });
  });

  it("refuses a Workdir-shaped payload signed with the service type", async () => {
    const token = await signRaw({
      ...registeredClaims(),
      uid: UID,
      workdir_path: WORKDIR,
      ops: ["skills.refresh"],
    });
    await expectRefused(verify(token), "bad_claims");
    const withWorkdirOps = await signRaw({ ...registeredClaims(), uid: UID, ops: ["read"] });
    await expectRefused(verify(withWorkdirOps), "bad_claims");
  });

  it("refuses claims that break the scope rules even when correctly signed", async () => {
    const noUid = await signRaw({ ...registeredClaims(), ops: ["skills.refresh"] });
    await expectRefused(verify(noUid), "bad_claims");
    const importWithUid = await signRaw({
      ...registeredClaims(),
      uid: UID,
      ops: ["skills.import"],
      skill_slug: "a",
      upload_key: UPLOAD_KEY,
    });
    await expectRefused(verify(importWithUid), "bad_claims");
    const importWithoutKey = await signRaw({
      ...registeredClaims(),
      ops: ["skills.import"],
      skill_slug: "a",
    });
    await expectRefused(verify(importWithoutKey), "bad_claims");
    const good = await signRaw({ ...registeredClaims(), uid: UID, ops: ["skills.personal"] });
    expect((await verify(good)).ok).toBe(true);
  });

  it("refuses missing, garbage and over-long tokens", async () => {
    await expectRefused(verify(undefined), "missing");
    await expectRefused(verify(""), "missing");
    await expectRefused(verify("not.a.jwt"), "malformed");
    await expectRefused(verify("a".repeat(MAX_CAPABILITY_TOKEN_CHARS + 1)), "malformed");
  });

  it("refuses expired, future, foreign, mis-addressed and over-long-lived tokens", async () => {
    const { token } = await mint({ ttlSeconds: 60 });
    expect((await verify(token, { now: at(63), clockToleranceSec: 5 })).ok).toBe(true);
    await expectRefused(verify(token, { now: at(66), clockToleranceSec: 5 }), "expired");
    await expectRefused(verify((await mint({ now: at(120) })).token), "not_yet_valid");
    await expectRefused(
      verify((await mint({ privateKey: otherKeys.privateJwk })).token),
      "bad_signature",
    );
    await expectRefused(verify((await mint({ audience: "elsewhere" })).token), "wrong_audience");
    await expectRefused(verify((await mint({ issuer: "someone" })).token), "wrong_issuer");
    const iat = Math.floor(T0.getTime() / 1000);
    const longLived = await signRaw({
      ...registeredClaims(),
      uid: UID,
      ops: ["skills.refresh"],
      exp: iat + MAX_CAPABILITY_TTL_SECONDS + 1,
    });
    await expectRefused(verify(longLived), "lifetime_too_long");
  });

  it("refuses an unsigned token and a changed payload", async () => {
    const payload = { ...registeredClaims(), uid: UID, ops: ["skills.refresh"] };
    await expectRefused(
      verify(unsignedToken(SERVICE_CAPABILITY_TOKEN_TYPE, payload)),
      "wrong_algorithm",
    );

    const { token } = await mint();
    await expectRefused(verify(withPayloadChanged(token, { uid: "bob" })), "bad_signature");
  });

  it("grantsServiceOp implies nothing", () => {
    expect(grantsServiceOp(["skills.refresh"], "skills.refresh")).toBe(true);
    expect(grantsServiceOp(["skills.refresh"], "skills.personal")).toBe(false);
    expect(grantsServiceOp(["skills.personal"], "skills.import")).toBe(false);
  });
});

describe("capabilityTokenType", () => {
  it("reads the unverified typ, normalized as jose compares it", async () => {
    expect(capabilityTokenType((await mint()).token)).toBe(SERVICE_CAPABILITY_TOKEN_TYPE);
    const workdir = await mintCapability({
      privateKey: keys.privateJwk,
      uid: UID,
      workdirPath: WORKDIR,
      ops: ["read"],
    });
    expect(capabilityTokenType(workdir.token)).toBe(CAPABILITY_TOKEN_TYPE);
    const prefixed = await signRaw(
      registeredClaims(),
      `application/${SERVICE_CAPABILITY_TOKEN_TYPE}`,
    );
    expect(capabilityTokenType(prefixed)).toBe(SERVICE_CAPABILITY_TOKEN_TYPE);
  });

  it("is undefined for anything that does not parse", () => {
    expect(capabilityTokenType("")).toBeUndefined();
    expect(capabilityTokenType("garbage")).toBeUndefined();
    expect(capabilityTokenType("a".repeat(MAX_CAPABILITY_TOKEN_CHARS + 1))).toBeUndefined();
  });
});

describe("createCapabilityMinter", () => {
  it("mints both types with one key; the service ones pass only the service verifier", async () => {
    const minter = createCapabilityMinter({ privateJwk: { ...keys.privateJwk, kid: "k1" } });
    const signal = AbortSignal.timeout(5_000);
    const service = await minter.mintService(
      {
        ops: ["skills.import"],
        skill: { slug: "pdf-tools", uploadKey: UPLOAD_KEY },
        ttlSeconds: 30,
      },
      signal,
    );
    expect(decodeProtectedHeader(service.token)).toMatchObject({ kid: "k1" });
    const options = { publicKey: keys.publicJwk, audience: DEFAULT_CAPABILITY_AUDIENCE };
    const verified = await verifyServiceCapability(service.token, options);
    expect(verified).toMatchObject({
      ok: true,
      claims: { ops: ["skills.import"], skill_slug: "pdf-tools", upload_key: UPLOAD_KEY },
    });
    expect(verified.ok && verified.claims.exp - verified.claims.iat).toBe(30);
    expect(await verifyCapability(service.token, options)).toEqual({
      ok: false,
      reason: "wrong_type",
    });
    const workdir = await minter.mint({ uid: UID, workdirPath: WORKDIR, ops: ["read"] }, signal);
    expect((await verifyCapability(workdir.token, options)).ok).toBe(true);
    await expect(minter.mintService({ ops: ["skills.refresh"] }, signal)).rejects.toThrow(/uid/);
  });
});
