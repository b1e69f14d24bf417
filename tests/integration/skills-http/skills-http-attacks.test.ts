import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SignJWT } from "jose";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  DEFAULT_CAPABILITY_AUDIENCE,
  DEFAULT_CAPABILITY_ISSUER,
  importCapabilityPrivateKey,
  SERVICE_CAPABILITY_TOKEN_TYPE,
  type ServiceCapabilityOp,
} from "../../../shared/capability/index.ts";
import { newKeyPair } from "../../unit/capability/capability-keys.ts";
import { buildZip } from "../skills/archive-builder.ts";
import { namesIn, snapshot, testSignal } from "../skills/skills-harness.ts";
import { snapshot as workspaceSnapshot } from "../workspace/harness.ts";
import {
  ALICE,
  ALICE_WORKDIR,
  BOB,
  errorOf,
  type SkillsHttpEnv,
  setupSkillsHttp,
} from "./skills-http-harness.ts";

// The attacker's side of the skills routes (docs/decisions/0011-skills-over-the-data-plane.md):
// a Workdir capability (what a browser holds) cannot call them, a service capability cannot
// open a Workdir, a capability for one user or one import cannot be stretched to another,
// and a missing, expired or forged one is 401. Each refusal also checks that nothing changed.

const REFRESH = "/internal/v1/skills/refresh";
const PERSONAL = "/internal/v1/skills/personal";
const IMPORT = "/internal/v1/skills/import";
const UPLOAD_KEY = "skill-uploads/6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b";
const MANIFEST = "---\ndescription: Hello\n---\n";

let env: SkillsHttpEnv;
let fresh: SkillsHttpEnv[];
beforeEach(async () => {
  env = await setupSkillsHttp();
  fresh = [];
  // Alice: a Workdir with a file; a granted skill that was never projected.
  (await env.users.ensureManagedWorkdir(ALICE, ALICE_WORKDIR)).close();
  writeFileSync(join(workdirOf(ALICE), "keep.txt"), "alice's file\n");
  await env.skillsEnv.install("hello", { "SKILL.md": MANIFEST });
  await env.skillsEnv.install("extra", { "SKILL.md": MANIFEST });
  await env.skillsEnv.grant(ALICE, "hello");
  // Bob: "hello" projected, then revoked without a refresh, and "extra" granted but not
  // projected yet. Any refresh of Bob's projection would change it in both ways.
  await env.skillsEnv.grant(BOB, "hello");
  expect(await env.skills.refresher.refresh(BOB, testSignal())).toMatchObject({ ok: true });
  await env.skillsEnv.revoke(BOB, "hello");
  await env.skillsEnv.grant(BOB, "extra");
  env.writePersonal(BOB, { "secret-skill/SKILL.md": "---\ndescription: Bob's\n---\n" });
});
afterEach(async () => {
  await Promise.all([env, ...fresh].map((e) => e.cleanup()));
});

function workdirOf(uid: string): string {
  return join(env.skillsEnv.dataRoot, "users", uid, "workspace", ALICE_WORKDIR);
}

/** Projections, sources and Alice's Workdir as they are now; compared after each attack. */
function state(): string {
  return JSON.stringify({
    alice: namesIn(env.skillsEnv.projectionPath(ALICE)),
    bob: snapshot(env.skillsEnv.projectionPath(BOB)),
    sources: namesIn(join(env.skillsEnv.dataRoot, "skills", "sources")),
    workdir: workspaceSnapshot(workdirOf(ALICE)),
  });
}

async function catalogue(): Promise<unknown> {
  return env.skillsEnv.database.sql`select slug, kind, content_hash from skills order by slug`;
}

const post = (path: string, token: string | null, body: unknown) =>
  env.request("POST", path, { token, body });

describe("a Workdir capability cannot call the skills routes", () => {
  it("403 on refresh, personal and import, whatever Workdir ops it has", async () => {
    const before = state();
    const rows = await catalogue();
    const key = await env.upload(buildZip([{ name: "SKILL.md", data: "x" }]));
    for (const ops of [
      ["read", "write"],
      ["read", "write", "delete", "check", "materialize", "import"],
    ] as const) {
      const token = await env.workdirToken({ ops });
      expect(await errorOf(await post(REFRESH, token, { uid: ALICE }))).toEqual({
        status: 403,
        code: "forbidden",
        reason: "operation_not_granted",
      });
      expect(await errorOf(await post(PERSONAL, token, { uid: BOB }))).toMatchObject({
        status: 403,
        reason: "operation_not_granted",
      });
      expect(
        await errorOf(await post(IMPORT, token, { slug: "hello", key, source_version: "x" })),
      ).toMatchObject({ status: 403, reason: "operation_not_granted" });
    }
    expect(state()).toBe(before);
    expect(await catalogue()).toEqual(rows);
  });

  it("an expired or forged Workdir capability is 401, not 403", async () => {
    const expired = await env.workdirToken({
      now: () => new Date(Date.now() - 3_600_000),
      ttlSeconds: 60,
    });
    expect(await errorOf(await post(REFRESH, expired, { uid: ALICE }))).toMatchObject({
      status: 401,
    });
    const other = await newKeyPair();
    const forged = await env.workdirToken({ privateKey: other.privateJwk });
    expect((await post(REFRESH, forged, { uid: ALICE })).status).toBe(401);
  });
});

describe("a service capability cannot open a Workdir", () => {
  it("403 on every Workdir route, for every service op, and nothing is read or written", async () => {
    const before = state();
    const fresh = "projects/11111111-2222-4333-8444-555555555555";
    const tokens = [
      await env.serviceToken({ ops: ["skills.refresh", "skills.personal"] }),
      await env.serviceToken({
        uid: undefined,
        ops: ["skills.import"],
        skill: { slug: "hello", uploadKey: UPLOAD_KEY },
      }),
    ];
    for (const token of tokens) {
      const refusals = [
        await env.request("GET", "/dp/v1/files?path=%2F", { token }),
        await env.request("GET", "/dp/v1/files/content?path=%2Fkeep.txt", { token }),
        await env.request("PUT", "/dp/v1/files/content?path=%2Fnew.txt", {
          token,
          rawBody: "planted",
        }),
        await env.request("POST", "/dp/v1/dirs?path=%2Fnew-dir", { token }),
        await env.request("DELETE", "/dp/v1/files?path=%2Fkeep.txt", { token }),
        await post("/internal/v1/workdirs/check", token, { workdir_path: ALICE_WORKDIR }),
        await post("/internal/v1/workdirs/materialize", token, { workdir_path: fresh }),
        await post("/internal/v1/attachments/import", token, {
          workdir_path: ALICE_WORKDIR,
          items: [],
        }),
      ];
      for (const response of refusals) {
        expect(await errorOf(response)).toEqual({
          status: 403,
          code: "forbidden",
          reason: "operation_not_granted",
        });
      }
    }
    expect(state()).toBe(before);
    expect(existsSync(join(workdirOf(ALICE), "new.txt"))).toBe(false);
    expect(existsSync(join(env.skillsEnv.dataRoot, "users", ALICE, "workspace", fresh))).toBe(
      false,
    );
  });

  it("a Workdir route still takes its own capability (the guard changes nothing else)", async () => {
    const token = await env.workdirToken({ ops: ["read"] });
    const response = await env.request("GET", "/dp/v1/files/content?path=%2Fkeep.txt", { token });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("alice's file\n");
    const garbage = await env.request("GET", "/dp/v1/files?path=%2F", { token: "x.y.z" });
    expect(garbage.status).toBe(401);
  });
});

describe("a service capability is held to its uid and its import", () => {
  it("a refresh capability for Alice cannot refresh Bob: 403, Bob's projection untouched", async () => {
    const before = state();
    const bobBefore = snapshot(env.skillsEnv.projectionPath(BOB));
    expect(Object.keys(bobBefore)).toContain("hello");
    const alices = await env.serviceToken({ ops: ["skills.refresh"] });
    expect(await errorOf(await post(REFRESH, alices, { uid: BOB }))).toEqual({
      status: 403,
      code: "forbidden",
      reason: "capability_scope",
    });
    // Spellings that would be the same user under a lax comparison are other users here.
    for (const uid of [`${BOB} `, "BOB", `${ALICE}\u0000`]) {
      expect((await post(REFRESH, alices, { uid })).status).toBe(403);
    }
    expect(snapshot(env.skillsEnv.projectionPath(BOB))).toEqual(bobBefore);
    expect(state()).toBe(before);

    // Bob's own capability does refresh it: the setup would have shown a refresh.
    const bobs = await env.serviceToken({ uid: BOB, ops: ["skills.refresh"] });
    const response = await post(REFRESH, bobs, { uid: BOB });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ ok: true, projected: ["extra"] });
    expect(namesIn(env.skillsEnv.projectionPath(BOB))).toEqual(["extra"]);
  });

  it("a personal-listing capability for Alice cannot list Bob's skills", async () => {
    const alices = await env.serviceToken({ ops: ["skills.personal"] });
    const response = await post(PERSONAL, alices, { uid: BOB });
    expect(await errorOf(response)).toMatchObject({ status: 403, reason: "capability_scope" });
    const own = await post(
      PERSONAL,
      await env.serviceToken({ uid: BOB, ops: ["skills.personal"] }),
      {
        uid: BOB,
      },
    );
    expect(await own.json()).toEqual({ items: [{ slug: "secret-skill", description: "Bob's" }] });
  });

  it("each op needs its own grant", async () => {
    const before = state();
    const cases: [ServiceCapabilityOp, string, unknown][] = [
      ["skills.personal", REFRESH, { uid: ALICE }],
      ["skills.refresh", PERSONAL, { uid: ALICE }],
    ];
    for (const [op, path, body] of cases) {
      const token = await env.serviceToken({ ops: [op] });
      expect(await errorOf(await post(path, token, body))).toMatchObject({
        status: 403,
        reason: "operation_not_granted",
      });
    }
    const importer = await env.serviceToken({
      uid: undefined,
      ops: ["skills.import"],
      skill: { slug: "hello", uploadKey: UPLOAD_KEY },
    });
    expect(await errorOf(await post(REFRESH, importer, { uid: ALICE }))).toMatchObject({
      status: 403,
      reason: "operation_not_granted",
    });
    const refresher = await env.serviceToken({ ops: ["skills.refresh"] });
    expect(
      await errorOf(
        await post(IMPORT, refresher, { slug: "hello", key: UPLOAD_KEY, source_version: "x" }),
      ),
    ).toMatchObject({ status: 403, reason: "operation_not_granted" });
    expect(state()).toBe(before);
  });

  it("an import capability imports only its own archive as its own slug", async () => {
    const mine = await env.upload(buildZip([{ name: "SKILL.md", data: MANIFEST }]));
    const evil = await env.upload(
      buildZip([{ name: "SKILL.md", data: "---\ndescription: replaced\n---\n" }]),
    );
    const before = state();
    const rows = await catalogue();
    const token = await env.serviceToken({
      uid: undefined,
      ops: ["skills.import"],
      skill: { slug: "newskill", uploadKey: mine },
    });
    // Another slug (replacing an existing skill), another archive: 403, nothing changes.
    for (const body of [
      { slug: "hello", key: mine, source_version: "x" },
      { slug: "newskill", key: evil, source_version: "x" },
      { slug: "hello", key: evil, source_version: "x" },
    ]) {
      expect(await errorOf(await post(IMPORT, token, body))).toMatchObject({
        status: 403,
        reason: "capability_scope",
      });
    }
    expect(state()).toBe(before);
    expect(await catalogue()).toEqual(rows);

    const ok = await post(IMPORT, token, { slug: "newskill", key: mine, source_version: "x" });
    expect(await ok.json()).toMatchObject({ ok: true, status: "installed" });
  });
});

describe("missing, expired and forged service capabilities: 401", () => {
  async function signed(
    payload: Record<string, unknown>,
    header: Record<string, unknown> = { alg: "EdDSA", typ: SERVICE_CAPABILITY_TOKEN_TYPE },
    privateJwk = env.keys.privateJwk,
  ): Promise<string> {
    const key = await importCapabilityPrivateKey(privateJwk);
    return new SignJWT(payload).setProtectedHeader({ alg: "EdDSA", ...header }).sign(key);
  }
  const claims = () => {
    const iat = Math.floor(Date.now() / 1000);
    return {
      uid: BOB,
      ops: ["skills.refresh"],
      aud: DEFAULT_CAPABILITY_AUDIENCE,
      iss: DEFAULT_CAPABILITY_ISSUER,
      iat,
      exp: iat + 60,
      jti: crypto.randomUUID(),
    };
  };

  it("every way of not holding a genuine capability is 401, and Bob's projection stays", async () => {
    const before = state();
    const other = await newKeyPair();
    const valid = await env.serviceToken({ uid: BOB });
    const [header, payload] = valid.split(".");
    const alicePayload = Buffer.from(
      JSON.stringify({
        ...JSON.parse(Buffer.from(payload ?? "", "base64url").toString()),
        uid: ALICE,
      }),
    ).toString("base64url");
    const none = `${Buffer.from(JSON.stringify({ alg: "none", typ: SERVICE_CAPABILITY_TOKEN_TYPE })).toString("base64url")}.${payload}.`;

    const attempts: [string, string | null][] = [
      ["no header", null],
      ["garbage", "not-a-token"],
      ["signed by another key", await env.serviceToken({ uid: BOB, privateKey: other.privateJwk })],
      ["payload changed", `${header}.${alicePayload}.${valid.split(".")[2]}`],
      ["alg none", none],
      ["wrong audience", await env.serviceToken({ uid: BOB, audience: "another-data-plane" })],
      ["wrong issuer", await env.serviceToken({ uid: BOB, issuer: "someone" })],
      ["lifetime too long", await signed({ ...claims(), exp: claims().iat + 3_600 })],
      ["no uid for a per-user op", await signed({ ...claims(), uid: undefined })],
      ["a third token type", await signed(claims(), { typ: "JWT" })],
      ["a Workdir type over service claims", await signed(claims(), { typ: "wc-capability+jwt" })],
    ];
    for (const [what, token] of attempts) {
      const response = await post(REFRESH, token, { uid: BOB });
      expect({ what, ...(await errorOf(response)) }).toMatchObject({
        what,
        status: 401,
        code: "unauthenticated",
        reason: undefined,
      });
      expect(response.headers.get("WWW-Authenticate")).toContain("Bearer");
    }
    expect(state()).toBe(before);
  });

  it("an expired one says so, so that an honest caller mints a new one", async () => {
    const expired = await env.serviceToken({
      uid: BOB,
      now: () => new Date(Date.now() - 3_600_000),
      ttlSeconds: 60,
    });
    expect(await errorOf(await post(REFRESH, expired, { uid: BOB }))).toEqual({
      status: 401,
      code: "unauthenticated",
      reason: "capability_expired",
    });
  });

  it("authentication comes first: unknown skills paths and oversized bodies are 401 without one", async () => {
    expect((await post("/internal/v1/skills/nothing", null, {})).status).toBe(401);
    const token = await env.serviceToken();
    expect((await post("/internal/v1/skills/nothing", token, {})).status).toBe(404);
    expect((await env.request("GET", REFRESH, { token })).status).toBe(404);
    const huge = { uid: "x".repeat(64 * 1024) };
    expect((await post(REFRESH, null, huge)).status).toBe(401);
    expect(await errorOf(await post(REFRESH, token, huge))).toMatchObject({
      status: 413,
      code: "payload_too_large",
    });
    expect(
      await errorOf(await env.request("POST", REFRESH, { token, rawBody: "{not json" })),
    ).toMatchObject({ status: 400, reason: "malformed_json" });
    expect(await errorOf(await post(REFRESH, token, { user: ALICE }))).toMatchObject({
      status: 400,
      code: "invalid_request",
    });
  });

  it("a data plane without skills wiring answers 503, after authentication", async () => {
    const bare = await setupSkillsHttp({ withoutSkills: true });
    fresh.push(bare);
    expect(
      (await bare.request("POST", REFRESH, { token: null, body: { uid: ALICE } })).status,
    ).toBe(401);
    const token = await bare.serviceToken();
    expect(
      await errorOf(await bare.request("POST", REFRESH, { token, body: { uid: ALICE } })),
    ).toMatchObject({ status: 503, code: "unavailable" });
  });
});
