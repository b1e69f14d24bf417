import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, expect, it } from "vitest";
import { measureWorkspaceUsage } from "../../../agent-host/quota/workspace-usage.ts";
import {
  createPersonalSkills,
  PERSONAL_SKILLS_PATH,
} from "../../../agent-host/skills/personal-skills.ts";
import { type DataPlaneEnv, errorOf, q, setupDataPlane } from "./harness.ts";

// Personal skills live in the UserWorkspace (`agents/skills/<slug>`, docs/architecture.md §6)
// and no route of their own writes them: they are written through the Files API of a
// Workdir that holds them (or by sandbox commands, docs/decisions/0050). That write is
// under the same quota: over it, 507 quota_exceeded, nothing written, the existing skill
// intact and still listed as before.

let env: DataPlaneEnv;
beforeEach(async () => {
  env = await setupDataPlane({ quotaMaxUsageAgeMs: 0 });
});
afterEach(() => env.finish());

const OLD_MANIFEST = "---\nname: notes\ndescription: Old notes skill\n---\nBody\n";

it("a personal skill write over the quota is 507: nothing written, the existing skill intact", async () => {
  const skills = join(env.aliceWorkspace, PERSONAL_SKILLS_PATH);
  mkdirSync(join(skills, "notes"), { recursive: true });
  writeFileSync(join(skills, "notes", "SKILL.md"), OLD_MANIFEST);
  const used = await measureWorkspaceUsage(env.aliceWorkspace, AbortSignal.timeout(10_000));
  // Room for a new directory and 100 bytes; the writes below are larger.
  const token = await env.token({
    workdirPath: PERSONAL_SKILLS_PATH,
    quota: { workspace_bytes: used.bytes + 100, workspace_inodes: used.inodes + 10 },
  });
  const manifest = `---\nname: fresh\ndescription: ${"x".repeat(600)}\n---\n`;

  expect((await env.request("POST", `/dp/v1/dirs?${q("/fresh")}`, { token })).status).toBe(201);
  const put = await env.request("PUT", `/dp/v1/files/content?${q("/fresh/SKILL.md")}`, {
    body: manifest,
    token,
  });
  expect(await errorOf(put)).toEqual({
    status: 507,
    code: "quota_exceeded",
    reason: "workspace_quota",
  });
  const extra = await env.request("PUT", `/dp/v1/files/content?${q("/notes/extra.md")}`, {
    body: "y".repeat(600),
    token,
  });
  expect((await errorOf(extra)).code).toBe("quota_exceeded");

  // Nothing written (no temp file either); the existing skill is byte for byte the same.
  expect(readdirSync(join(skills, "fresh"))).toEqual([]);
  expect(readdirSync(join(skills, "notes"))).toEqual(["SKILL.md"]);
  expect(readFileSync(join(skills, "notes", "SKILL.md"), "utf8")).toBe(OLD_MANIFEST);
  const personal = createPersonalSkills({
    workspaces: env.users,
    logger: pino({ level: "silent" }),
  });
  expect(await personal.list("alice", AbortSignal.timeout(10_000))).toEqual([
    { slug: "notes", description: "Old notes skill" },
  ]);

  // A raised quota lets the same skill in.
  const raised = await env.token({
    workdirPath: PERSONAL_SKILLS_PATH,
    quota: { workspace_bytes: used.bytes + 10_000, workspace_inodes: used.inodes + 10 },
  });
  const through = await env.request("PUT", `/dp/v1/files/content?${q("/fresh/SKILL.md")}`, {
    body: manifest,
    token: raised,
  });
  expect(through.status).toBe(201);
  expect((await personal.list("alice", AbortSignal.timeout(10_000))).map((s) => s.slug)).toEqual([
    "fresh",
    "notes",
  ]);
});
