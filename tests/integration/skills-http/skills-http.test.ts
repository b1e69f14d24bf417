import { chmodSync, existsSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createCapabilityMinter } from "../../../functions/capability/create-capability-minter.ts";
import { createHttpSkillsDataPlane } from "../../../functions/skills/http-skills-data-plane.ts";
import type { SkillsDataPlane } from "../../../shared/contracts/skills-data-plane.ts";
import { WorkcellError } from "../../../shared/errors/index.ts";
import { newKeyPair } from "../../unit/capability/capability-keys.ts";
import { buildZip } from "../skills/archive-builder.ts";
import { namesIn, testSignal } from "../skills/skills-harness.ts";
import { ALICE, BOB, type SkillsHttpEnv, setupSkillsHttp } from "./skills-http-harness.ts";

// functions/'s HTTP SkillsDataPlane against a real data plane with the real agent-host
// skills handlers, Postgres and S3 (fauxqs): the same scenario is played through the
// in-process implementation on one fresh agent-host and through HTTP on another, and every
// outcome (values and thrown errors) must be the same.

const MANIFEST = (description: string) => `---\nname: x\ndescription: ${description}\n---\n`;

const envs: SkillsHttpEnv[] = [];
async function fresh(options?: Parameters<typeof setupSkillsHttp>[0]): Promise<SkillsHttpEnv> {
  const env = await setupSkillsHttp(options);
  envs.push(env);
  return env;
}
afterEach(async () => {
  await Promise.all(envs.splice(0).map((env) => env.cleanup()));
});

/** Every step's outcome, with the env's own data root replaced so two envs compare. */
async function scenario(env: SkillsHttpEnv, dp: SkillsDataPlane): Promise<unknown[]> {
  const signal = testSignal();
  const out: unknown[] = [];
  const record = async (step: string, run: () => Promise<unknown>) => {
    try {
      out.push([step, contractShape(await run())]);
    } catch (err) {
      if (!(err instanceof WorkcellError)) throw err;
      out.push([step, "threw", err.code, err.message, err.details]);
    }
  };

  await record("personal, none yet", () => dp.listPersonalSkills(ALICE, signal));
  const personalDir = env.writePersonal(ALICE, {
    "notes/SKILL.md": MANIFEST("My notes"),
    "drafts/SKILL.md": MANIFEST("Drafts"),
    "no-manifest/README.md": "x",
  });
  symlinkSync(join(personalDir, "notes"), join(personalDir, "alias"));
  await record("personal", () => dp.listPersonalSkills(ALICE, signal));
  await record("personal of a user without a workspace", () => dp.listPersonalSkills(BOB, signal));

  const v1 = await env.upload(
    buildZip([
      { name: "SKILL.md", data: MANIFEST("PDF tools") },
      { name: "bin/run.sh", data: "#!/bin/sh\necho hi\n", unixMode: 0o100755 },
    ]),
  );
  const imp = (slug: string, key: string) =>
    dp.importSkill({ slug, key, sourceVersion: `upload:${key.slice(-36)}` }, signal);
  await record("import v1", () => imp("pdf-tools", v1));
  await record("import v1 again", () => imp("pdf-tools", v1));
  const v2 = await env.upload(buildZip([{ name: "SKILL.md", data: MANIFEST("PDF tools v2") }]));
  await record("import v2", () => imp("pdf-tools", v2));
  const evil = await env.upload(
    buildZip([
      { name: "SKILL.md", data: "x" },
      { name: "passwd", data: "/etc/passwd", unixMode: 0o120777 },
    ]),
  );
  await record("import with a symlink entry", () => imp("evil", evil));
  await record("import of nothing uploaded", () =>
    imp("ghost", `skill-uploads/${crypto.randomUUID()}`),
  );
  await record("import with a bad slug", () => imp("Bad_Slug", v1));
  await env.skillsEnv.install("builtin-one", { "SKILL.md": "builtin" }, "builtin");
  await record("import over a builtin", () => imp("builtin-one", v1));
  await record("import of a key that is not an upload", () => imp("pdf-tools", "tmp/alice/x"));

  await record("refresh, no grants", () => dp.refreshProjection(ALICE, signal));
  await env.skillsEnv.grant(ALICE, "pdf-tools");
  await env.skillsEnv.grant(ALICE, "builtin-one");
  await record("refresh after grants", () => dp.refreshProjection(ALICE, signal));
  await record("refresh again (no-op)", () => dp.refreshProjection(ALICE, signal));
  await env.skillsEnv.revoke(ALICE, "pdf-tools");
  await record("refresh after a revoke", () => dp.refreshProjection(ALICE, signal));
  // A planted symlink in a granted source: that slug is removed and the refresh fails.
  const source = env.skillsEnv.sourcePath("builtin-one");
  chmodSync(source, 0o755);
  symlinkSync("/etc/passwd", join(source, "passwd"));
  await record("refresh with a refused source", () => dp.refreshProjection(ALICE, signal));

  return JSON.parse(JSON.stringify(out).replaceAll(env.skillsEnv.dataRoot, "<data-root>"));
}

/**
 * What the SkillsDataPlane contract declares of a result. The in-process implementation
 * returns the handlers' own objects, which carry more (a refresh's copied/unchanged/removed,
 * a catalogue row's source_version); the contract, and so the HTTP client, has only these.
 */
function contractShape(value: unknown): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const v = value as Record<string, unknown>;
  if ("projected" in v) return { ok: v.ok, projected: v.projected, failures: v.failures };
  if (v.ok === true && typeof v.skill === "object" && v.skill !== null) {
    const { slug, kind, description, contentHash } = v.skill as Record<string, unknown>;
    return { ok: true, status: v.status, skill: { slug, kind, description, contentHash } };
  }
  return value;
}

describe("HTTP SkillsDataPlane against the real data plane", () => {
  it("gives the same outcomes as the in-process implementation, step by step", async () => {
    const [local, remote] = await Promise.all([fresh(), fresh()]);
    const expected = await scenario(local, local.inProcess);
    const actual = await scenario(remote, remote.http);
    expect(actual).toEqual(expected);

    // And the outcomes are the ones the scenario is about (not two equal failures).
    const byStep = new Map(actual.map((entry) => [(entry as unknown[])[0], entry]));
    const at = (step: string) => (byStep.get(step) as unknown[])[1];
    expect(at("personal, none yet")).toEqual([]);
    expect(at("personal")).toEqual([
      { slug: "drafts", description: "Drafts" },
      { slug: "notes", description: "My notes" },
    ]);
    expect(at("import v1")).toMatchObject({
      ok: true,
      status: "installed",
      skill: { slug: "pdf-tools", kind: "shared", description: "PDF tools" },
    });
    expect(at("import v1 again")).toMatchObject({ ok: true, status: "unchanged" });
    expect(at("import v2")).toMatchObject({ ok: true, status: "updated" });
    expect(at("import with a symlink entry")).toMatchObject({
      ok: false,
      reason: "archive_rejected",
      entry: "passwd",
    });
    expect(at("import of nothing uploaded")).toMatchObject({
      ok: false,
      reason: "archive_missing",
    });
    expect(at("import with a bad slug")).toMatchObject({ ok: false, reason: "invalid_slug" });
    expect(at("import over a builtin")).toMatchObject({ ok: false, reason: "kind_conflict" });
    expect(byStep.get("import of a key that is not an upload")).toEqual([
      "import of a key that is not an upload",
      "threw",
      "invalid_request",
      "Not a skill upload key.",
      { field: "key" },
    ]);
    expect(at("refresh, no grants")).toEqual({ ok: true, projected: [], failures: [] });
    expect(at("refresh after grants")).toMatchObject({
      ok: true,
      projected: ["builtin-one", "pdf-tools"],
    });
    expect(at("refresh after a revoke")).toMatchObject({ ok: true, projected: ["builtin-one"] });
    expect(at("refresh with a refused source")).toMatchObject({
      ok: false,
      projected: [],
      failures: [{ slug: "builtin-one", reason: "source_refused" }],
    });
  });

  it("refresh through HTTP changes the projection on disk (grant, then revoke)", async () => {
    const env = await fresh();
    await env.skillsEnv.install("hello", { "SKILL.md": MANIFEST("Hello") });
    await env.skillsEnv.grant(ALICE, "hello");
    const projection = env.skillsEnv.projectionPath(ALICE);
    expect(await env.http.refreshProjection(ALICE, testSignal())).toEqual({
      ok: true,
      projected: ["hello"],
      failures: [],
    });
    expect(namesIn(projection)).toEqual(["hello"]);
    await env.skillsEnv.revoke(ALICE, "hello");
    await env.http.refreshProjection(ALICE, testSignal());
    expect(namesIn(projection)).toEqual([]);
  });

  it("an import through HTTP lands in the source store and the catalogue", async () => {
    const env = await fresh();
    const key = await env.upload(buildZip([{ name: "SKILL.md", data: MANIFEST("Tools") }]));
    const result = await env.http.importSkill(
      { slug: "tools", key, sourceVersion: "upload:x" },
      testSignal(),
    );
    expect(result).toMatchObject({ ok: true, status: "installed" });
    expect(existsSync(join(env.skillsEnv.sourcePath("tools"), "SKILL.md"))).toBe(true);
    const rows = await env.skillsEnv.database
      .sql`select slug, kind, source_version from skills where slug = 'tools'`;
    expect(rows).toEqual([{ slug: "tools", kind: "shared", source_version: "upload:x" }]);
  });
});

describe("HTTP SkillsDataPlane failures", () => {
  it("an agent-host that cannot be reached is unavailable", async () => {
    const env = await fresh();
    await env.server.close();
    await expect(env.http.refreshProjection(ALICE, testSignal())).rejects.toMatchObject({
      code: "unavailable",
    });
    await expect(env.http.listPersonalSkills(ALICE, testSignal())).rejects.toMatchObject({
      code: "unavailable",
    });
  });

  it("an agent-host that does not answer in time is unavailable; the caller's abort is its own", async () => {
    const env = await fresh();
    const slow = createHttpSkillsDataPlane({
      baseUrl: env.server.url,
      capabilities: createCapabilityMinter({ privateJwk: env.keys.privateJwk }),
      timeoutMs: 50,
      fetch: (input, init) =>
        new Promise((_, reject) => {
          init?.signal?.addEventListener("abort", () => reject(init.signal?.reason), {
            once: true,
          });
          void input;
        }),
    });
    await expect(slow.listPersonalSkills(ALICE, testSignal())).rejects.toMatchObject({
      code: "unavailable",
    });
    const caller = new AbortController();
    const pending = slow.listPersonalSkills(ALICE, caller.signal);
    caller.abort(new Error("client went away"));
    await expect(pending).rejects.toThrow("client went away");
  });

  it("a data plane without skills wiring is unavailable", async () => {
    const env = await fresh({ withoutSkills: true });
    await expect(env.http.refreshProjection(ALICE, testSignal())).rejects.toMatchObject({
      code: "unavailable",
    });
  });

  it("a data plane holding another public key: internal (a key pair mismatch), nothing done", async () => {
    const env = await fresh();
    await env.skillsEnv.install("hello", { "SKILL.md": "x" });
    await env.skillsEnv.grant(ALICE, "hello");
    const other = await newKeyPair();
    const client = createHttpSkillsDataPlane({
      baseUrl: env.server.url,
      capabilities: createCapabilityMinter({ privateJwk: other.privateJwk }),
    });
    await expect(client.refreshProjection(ALICE, testSignal())).rejects.toMatchObject({
      code: "internal",
    });
    expect(namesIn(env.skillsEnv.projectionPath(ALICE))).toEqual([]);
  });

  it("an answer that is not the data plane's is refused", async () => {
    const env = await fresh();
    const client = (body: string, status: number, maxResponseBytes?: number) =>
      createHttpSkillsDataPlane({
        baseUrl: env.server.url,
        capabilities: createCapabilityMinter({ privateJwk: env.keys.privateJwk }),
        fetch: async () => new Response(body, { status }),
        ...(maxResponseBytes === undefined ? {} : { maxResponseBytes }),
      });
    await expect(
      client("<html>bad gateway</html>", 502).listPersonalSkills(ALICE, testSignal()),
    ).rejects.toMatchObject({ code: "unavailable" });
    await expect(
      client('{"items": "nope"}', 200).listPersonalSkills(ALICE, testSignal()),
    ).rejects.toMatchObject({ code: "internal" });
    await expect(
      client(JSON.stringify({ items: [] }), 200, 4).listPersonalSkills(ALICE, testSignal()),
    ).rejects.toMatchObject({ code: "unavailable" });
  });
});
