import { randomUUID } from "node:crypto";
import { chownSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type Docker from "dockerode";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DockerDriver } from "../../../agent-host/sandbox/container/docker-driver.ts";
import type { SandboxInstance } from "../../../agent-host/sandbox/driver.ts";
import { LABEL } from "../../../agent-host/sandbox/instance/container-labels.ts";
import { registerBuiltinSkills } from "../../../agent-host/skills/builtin-skills.ts";
import { removeContainersLabelled } from "../../support/docker.ts";
import {
  createTestSandbox,
  dockerForTest,
  GEM,
  materializeWorkdir,
} from "../sandbox/sandbox-fixture.ts";
import { type SkillsEnv, setupSkills, silentLogger, testSignal } from "./skills-harness.ts";

const ALICE = "alice";
const BOB = "bob";

describe("skills inside a sandbox", () => {
  let docker: Docker;
  let env: SkillsEnv;
  let nodeId: string;
  let driver: DockerDriver;

  beforeEach(async () => {
    env = await setupSkills();
    ({ docker, nodeId, driver } = dockerForTest(env.dataRoot));
    // The real builtins (infra/skills/builtin) and two shared skills.
    const builtins = await registerBuiltinSkills(
      { store: env.store, sys: env.sys, logger: silentLogger },
      testSignal(),
    );
    expect(builtins.map((b) => [b.slug, b.status])).toEqual([
      ["hello", "installed"],
      ["skill-authoring", "installed"],
    ]);
    await env.install("pdf-tools", {
      "SKILL.md": "---\ndescription: PDF\n---\n",
      "split.py": "print('split')\n",
    });
    await env.install("bob-only", { "SKILL.md": "---\ndescription: Bob's\n---\n" });
  });

  afterEach(async () => {
    await removeContainersLabelled(docker, LABEL.nodeId, nodeId);
    await env.cleanup();
  });

  async function sandboxFor(uid: string): Promise<SandboxInstance> {
    const workdirPath = `projects/${randomUUID()}`;
    await materializeWorkdir(env.dataRoot, uid, workdirPath);
    return createTestSandbox(driver, { uid, workdirPath, nodeId }, testSignal());
  }

  async function sh(c: SandboxInstance, script: string) {
    const out = await driver.exec(c, { cmd: ["sh", "-c", script] }, testSignal());
    if (!out.ok) throw new Error("sandbox gone");
    return {
      code: out.result.exitCode,
      out: out.result.stdout.bytes.toString(),
      err: out.result.stderr.bytes.toString(),
    };
  }

  it("mounts the projection read-only with exactly the granted skills; personal skills sit in user-data", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(ALICE, "pdf-tools");
    await env.grant(BOB, "bob-only");
    expect((await env.refresher().refresh(ALICE, testSignal())).ok).toBe(true);
    expect((await env.refresher().refresh(BOB, testSignal())).ok).toBe(true);
    // Alice's personal skill, in her workspace as the sandbox user would have written it.
    const workspace = join(env.dataRoot, "users", ALICE, "workspace");
    for (const dir of ["agents", "agents/skills", "agents/skills/my-notes"]) {
      mkdirSync(join(workspace, dir), { recursive: true });
      chownSync(join(workspace, dir), GEM, GEM);
    }
    writeFileSync(
      join(workspace, "agents/skills/my-notes/SKILL.md"),
      "---\ndescription: mine\n---\n",
    );

    const box = await sandboxFor(ALICE);

    expect(await sh(box, "ls -A /home/gem/skills")).toMatchObject({
      code: 0,
      out: "hello\npdf-tools\n",
    });
    expect((await sh(box, "id -u; cat /home/gem/skills/hello/SKILL.md")).out).toMatch(
      /^1000\n---\nname: hello/,
    );
    expect(await sh(box, "/home/gem/skills/hello/scripts/hello.sh gem")).toMatchObject({
      code: 0,
      out: "Hello, gem!\n",
    });
    expect(await sh(box, "ls -ld /home/gem/skills/pdf-tools/split.py | cut -c1-10")).toMatchObject({
      out: "-r--r--r--\n",
    });
    // Read-only: the mount refuses writes (and even a chmod) anywhere below it.
    expect((await sh(box, "grep ' /home/gem/skills ' /proc/mounts")).out).toMatch(/\sro[\s,]/);
    for (const attempt of [
      "touch /home/gem/skills/new",
      "touch /home/gem/skills/hello/new",
      "echo x >> /home/gem/skills/hello/SKILL.md",
      "rm -rf /home/gem/skills/pdf-tools",
      "mv /home/gem/skills/hello /home/gem/skills/renamed",
      "chmod 777 /home/gem/skills/hello/SKILL.md",
    ]) {
      expect((await sh(box, `${attempt} 2>/dev/null`)).code, attempt).not.toBe(0);
    }
    expect(await sh(box, "ls -A /home/gem/skills")).toMatchObject({ out: "hello\npdf-tools\n" });
    // Never another uid's skills.
    expect((await sh(box, "ls /home/gem/skills/bob-only 2>&1")).code).not.toBe(0);
    expect((await sh(box, "ls /home/gem/skills/../ 2>&1")).out).not.toContain("bob");
    // The personal skill is in the user-data mount, not in the projection.
    expect(await sh(box, "cat /home/gem/user-data/agents/skills/my-notes/SKILL.md")).toMatchObject({
      code: 0,
      out: "---\ndescription: mine\n---\n",
    });
    expect((await sh(box, "ls /home/gem/skills/my-notes 2>&1")).code).not.toBe(0);
  });

  it("a revoke refreshed on the host disappears from a live sandbox; a new grant appears", async () => {
    await env.grant(ALICE, "hello");
    await env.grant(ALICE, "pdf-tools");
    await env.refresher().refresh(ALICE, testSignal());
    const box = await sandboxFor(ALICE);
    expect((await sh(box, "ls -A /home/gem/skills")).out).toBe("hello\npdf-tools\n");

    await env.revoke(ALICE, "pdf-tools");
    await env.grant(ALICE, "skill-authoring");
    const outcome = await env.refresher().refresh(ALICE, testSignal());
    expect(outcome).toMatchObject({
      ok: true,
      removed: ["pdf-tools"],
      copied: ["skill-authoring"],
    });

    expect((await sh(box, "ls -A /home/gem/skills")).out).toBe("hello\nskill-authoring\n");
    expect((await sh(box, "cat /home/gem/skills/pdf-tools/split.py 2>&1")).code).not.toBe(0);
  });
});
