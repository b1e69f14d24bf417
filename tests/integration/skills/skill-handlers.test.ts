import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { registerBuiltinSkills } from "../../../agent-host/skills/builtin-skills.ts";
import { createSkillImportHandler } from "../../../agent-host/skills/import-handler.ts";
import { createPersonalSkills } from "../../../agent-host/skills/personal-skills.ts";
import {
  createSkillsRefreshHandler,
  refreshFailureError,
} from "../../../agent-host/skills/refresh-handler.ts";
import { createSkillImporter } from "../../../agent-host/skills/skill-importer.ts";
import { createPathResolver, createUserWorkspaces } from "../../../agent-host/workspace/index.ts";
import { queueDisposition } from "../../../shared/errors/index.ts";
import { freshBucket, s3Client } from "../../support/aws.ts";
import { buildZip } from "./archive-builder.ts";
import {
  type SkillsEnv,
  setupSkills,
  silentLogger,
  testSignal,
  writeTree,
} from "./skills-harness.ts";

describe("skills handlers", () => {
  let env: SkillsEnv;

  beforeEach(async () => {
    env = await setupSkills();
  });

  afterEach(async () => {
    await env.cleanup();
  });

  it("the refresh handler takes a skills.refresh message and re-reads the grants itself", async () => {
    await env.install("hello", { "SKILL.md": "x" });
    await env.grant("alice", "hello");
    const handler = createSkillsRefreshHandler({ refresher: env.refresher() });
    await expect(handler.handle({ type: "skills.refresh" }, testSignal())).rejects.toMatchObject({
      code: "invalid_request",
    });
    await expect(
      handler.handle({ type: "run.dispatch", uid: "alice" }, testSignal()),
    ).rejects.toMatchObject({
      code: "invalid_request",
    });
    const outcome = await handler.handle(
      { type: "skills.refresh", uid: "alice", extra: "ignored" },
      testSignal(),
    );
    expect(outcome).toMatchObject({ ok: true, projected: ["hello"] });
    expect(refreshFailureError(outcome)).toBeUndefined();
  });

  it("maps failed refreshes to retry or dead-letter", () => {
    const base = {
      ok: false,
      projected: [],
      copied: [],
      unchanged: [],
      removed: [],
      skipped: false,
    };
    const busy = refreshFailureError({
      ...base,
      projected: null,
      failures: [{ slug: null, reason: "busy", message: "" }],
    });
    const bad = refreshFailureError({
      ...base,
      failures: [{ slug: "x", reason: "source_refused", message: "" }],
    });
    expect(queueDisposition(busy?.code ?? "internal")).toBe("retry");
    expect(queueDisposition(bad?.code ?? "internal")).toBe("dead_letter");
  });

  it("registers builtins once, skips broken ones, and never overwrites a shared skill", async () => {
    const dir = mkdtempSync(join(tmpdir(), "workcell-builtins-"));
    try {
      writeTree(dir, {
        "alpha/SKILL.md": "---\ndescription: Alpha\n---\n",
        "alpha/run.sh": { content: "#!/bin/sh\n", mode: 0o755 },
        "linked/SKILL.md": "x",
        "no-manifest/README.md": "x",
        "taken/SKILL.md": "builtin version",
        "Not_A_Slug/SKILL.md": "x",
      });
      symlinkSync("/etc/passwd", join(dir, "linked", "passwd"));
      await env.install("taken", { "SKILL.md": "shared version" });

      const deps = { store: env.store, sys: env.sys, logger: silentLogger, builtinDir: dir };
      const first = await registerBuiltinSkills(deps, testSignal());
      expect(Object.fromEntries(first.map((r) => [r.slug, r.status]))).toEqual({
        Not_A_Slug: "invalid",
        alpha: "installed",
        linked: "invalid",
        "no-manifest": "invalid",
        taken: "conflict",
      });
      const second = await registerBuiltinSkills(deps, testSignal());
      expect(second.find((r) => r.slug === "alpha")?.status).toBe("unchanged");
      const rows = await env.database.sql`select slug, kind, description from skills order by slug`;
      expect(rows).toEqual([
        { slug: "alpha", kind: "builtin", description: "Alpha" },
        { slug: "taken", kind: "shared", description: "" },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("lists personal skills from agents/skills, never following links or opening FIFOs", async () => {
    const sys = env.sys;
    const workspaces = createUserWorkspaces({
      dataRoot: env.dataRoot,
      sys,
      resolver: createPathResolver(sys),
    });
    const personal = createPersonalSkills({ workspaces, logger: silentLogger });
    expect(await personal.list("nobody", testSignal())).toEqual([]);

    const skills = join(env.dataRoot, "users", "alice", "workspace", "agents", "skills");
    mkdirSync(skills, { recursive: true });
    writeTree(skills, {
      "notes/SKILL.md": "---\ndescription: My notes\n---\n",
      "long/SKILL.md": `---\ndescription: Long one\n---\n${"x".repeat(200_000)}`,
      "no-manifest/README.md": "x",
    });
    mkdirSync(join(skills, "fifo"));
    execFileSync("mkfifo", [join(skills, "fifo", "SKILL.md")]);
    mkdirSync(join(skills, "linked"));
    symlinkSync("/etc/hostname", join(skills, "linked", "SKILL.md"));
    symlinkSync(join(skills, "notes"), join(skills, "alias"));
    expect(await personal.list("alice", testSignal())).toEqual([
      { slug: "long", description: "Long one" },
      { slug: "notes", description: "My notes" },
    ]);

    // A symlinked agents/ directory is not followed at all.
    const other = join(env.dataRoot, "users", "bob", "workspace");
    mkdirSync(other, { recursive: true });
    symlinkSync(join(env.dataRoot, "users", "alice", "workspace", "agents"), join(other, "agents"));
    expect(await personal.list("bob", testSignal())).toEqual([]);
  });

  it("the import handler fetches only skill upload keys, bounded", async () => {
    const s3 = s3Client();
    const bucket = await freshBucket(s3);
    const importer = createSkillImporter({ store: env.store, sys: env.sys, durable: false });
    const handler = createSkillImportHandler({
      s3,
      bucket,
      importer,
      limits: { maxArchiveBytes: 1024 },
    });
    const id = crypto.randomUUID();
    const request = (key: string) => ({ slug: "tiny", key, sourceVersion: "t" });

    await expect(handler.handle(request("tmp/alice/x"), testSignal())).rejects.toMatchObject({
      code: "invalid_request",
    });
    await expect(
      handler.handle(request(`skill-uploads/${id}/../x`), testSignal()),
    ).rejects.toMatchObject({
      code: "invalid_request",
    });
    expect(await handler.handle(request(`skill-uploads/${id}`), testSignal())).toMatchObject({
      ok: false,
      reason: "archive_missing",
    });
    await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: `skill-uploads/${id}`,
        Body: Buffer.alloc(2048),
      }),
    );
    expect(await handler.handle(request(`skill-uploads/${id}`), testSignal())).toMatchObject({
      ok: false,
      reason: "archive_too_large",
    });
    const small = crypto.randomUUID();
    await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: `skill-uploads/${small}`,
        Body: buildZip([{ name: "SKILL.md", data: "hi" }]),
      }),
    );
    expect(await handler.handle(request(`skill-uploads/${small}`), testSignal())).toMatchObject({
      ok: true,
      status: "installed",
    });
  });
});
