import { createHash } from "node:crypto";
import { existsSync, lstatSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseDataPlanePath } from "../../../agent-host/workspace/index.ts";
import {
  expectCode,
  namesIn,
  RESOLVER_KINDS,
  setupWorkspace,
  UID,
  WORKDIR,
  type WorkspaceEnv,
} from "./harness.ts";

describe.each(RESOLVER_KINDS)("workdirs (%s resolver)", (kind) => {
  let env: WorkspaceEnv;
  beforeEach(async () => {
    env = await setupWorkspace(kind);
  });
  afterEach(() => env.finish());

  describe("ensureManagedWorkdir", () => {
    it("creates the UserWorkspace and the Workdir 0700, and nothing else", async () => {
      expect(namesIn(env.workspace)).toEqual(["projects"]);
      expect(namesIn(join(env.workspace, "projects"))).toEqual([WORKDIR.split("/")[1]]);
      expect(namesIn(env.workdir)).toEqual([]); // no uploads/ or outputs/ ahead of use
      for (const dir of [env.workspace, join(env.workspace, "projects"), env.workdir]) {
        expect(lstatSync(dir).mode & 0o777).toBe(0o700);
      }
    });

    it("is idempotent, also when called concurrently, and binds to the Workdir", async () => {
      writeFileSync(env.at("kept.txt"), "x");
      const all = await Promise.all(
        Array.from({ length: 16 }, () =>
          env.users.ensureManagedWorkdir(
            UID,
            WORKDIR.toUpperCase().replace("PROJECTS", "projects"),
          ),
        ),
      );
      try {
        for (const fs of all)
          expect((await fs.list("")).items.map((i) => i.name)).toEqual(["kept.txt"]);
      } finally {
        for (const fs of all) fs.close();
      }
      const other = "projects/22222222-3333-4444-8555-666666666666";
      const fresh = await Promise.all(
        Array.from({ length: 16 }, () => env.users.ensureManagedWorkdir(UID, other)),
      );
      for (const fs of fresh) fs.close();
      expect(namesIn(join(env.workspace, "projects")).length).toBe(2);
    });

    it("accepts only projects/<uuid>", async () => {
      for (const bad of ["linked", "projects", "projects/not-a-uuid", "../x", "/abs", "a//b", ""]) {
        await expectCode(() => env.users.ensureManagedWorkdir(UID, bad), "invalid_request");
      }
      expect(namesIn(env.workspace)).toEqual(["projects"]);
    });

    it("hashes uids that are not plain names into their own directory", async () => {
      const uid = "oidc:tenant/user";
      const fs = await env.users.ensureManagedWorkdir(uid, WORKDIR);
      fs.close();
      const dirname = `uid-${createHash("sha256").update(uid).digest("hex")}`;
      expect(readdirSync(join(env.dataRoot, "users")).sort()).toEqual([UID, dirname].sort());
    });
  });

  describe("openExistingWorkdir", () => {
    it("opens an existing directory of the UserWorkspace", async () => {
      mkdirSync(join(env.workspace, "code/repo"), { recursive: true });
      writeFileSync(join(env.workspace, "code/repo/README"), "r");
      const fs = await env.users.openExistingWorkdir(UID, "code/repo");
      try {
        expect((await fs.list("")).items.map((i) => i.name)).toEqual(["README"]);
      } finally {
        fs.close();
      }
    });

    it("missing → not_found, a file → invalid_request, bad path → invalid_request, nothing created", async () => {
      writeFileSync(join(env.workspace, "file"), "x");
      await expectCode(
        () => env.users.openExistingWorkdir(UID, "nope"),
        "not_found",
        "workdir_missing",
      );
      await expectCode(() => env.users.openExistingWorkdir(UID, "nope/deeper"), "not_found");
      await expectCode(
        () => env.users.openExistingWorkdir(UID, "file"),
        "invalid_request",
        "not_a_directory",
      );
      await expectCode(() => env.users.openExistingWorkdir(UID, "file/x"), "not_found");
      await expectCode(() => env.users.openExistingWorkdir(UID, "../outside"), "invalid_request");
      await expectCode(
        () => env.users.openExistingWorkdir("nobody", "code"),
        "not_found",
        "workdir_missing",
      );
      expect(existsSync(join(env.dataRoot, "users", "nobody"))).toBe(false);
      expect(namesIn(env.workspace)).toEqual(["file", "projects"]);
    });
  });

  describe("cross-user", () => {
    it("one user's Workdir never reaches another user's workspace, whatever the path", async () => {
      const bob = await env.users.ensureManagedWorkdir("bob", WORKDIR);
      await bob.writeFile("bob-secret.txt", "bob");
      bob.close();
      for (const path of [
        "../../../../bob/workspace/projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc/bob-secret.txt",
        "/work/../bob-secret.txt",
        join(env.dataRoot, "users/bob/workspace"),
      ]) {
        await expectCode(() => env.fs.readFile(path), "forbidden");
        await expectCode(() => env.fs.list(path), "forbidden");
      }
      await expectCode(() => env.users.openUserWorkspace("carol"), "not_found");
    });
  });
});

describe("parseDataPlanePath", () => {
  const ok: [string, string][] = [
    ["/", ""],
    ["/a.txt", "a.txt"],
    ["/dir/sub/file", "dir/sub/file"],
    ["/dir/", "dir"],
    ["/home/gemstone.txt", "home/gemstone.txt"],
    ["/%2e%2e", "%2e%2e"], // a literal name; only its decoded form is an escape
    [`/${"n".repeat(255)}`, "n".repeat(255)],
  ];
  for (const [raw, relative] of ok) {
    it(`${JSON.stringify(raw)} → ${JSON.stringify(relative)}`, () => {
      expect(parseDataPlanePath(raw)).toBe(relative);
    });
  }

  const forbidden = [
    "/..",
    "/a/../b",
    "/../../etc/passwd",
    decodeURIComponent("/%2e%2e/secret"),
    decodeURIComponent("/a/%2E%2E"),
    "/a\\b",
    "/http://x",
    "/a\u0000b",
    "/home/gem",
    "/home/gem/user-data/projects/x/a.txt",
    "/home/gem/skills/x",
  ];
  for (const raw of forbidden) {
    it(`${JSON.stringify(raw)} is forbidden`, async () => {
      await expectCode(() => parseDataPlanePath(raw), "forbidden", "path_outside_workdir");
    });
  }

  const invalid = [
    "",
    "a.txt",
    "//",
    "/a//b",
    "/./a",
    "/a/.",
    `/${"n".repeat(256)}`,
    `/${"d/".repeat(2100)}x`,
  ];
  for (const raw of invalid) {
    it(`${JSON.stringify(raw.length > 30 ? `${raw.slice(0, 12)}…` : raw)} is invalid`, async () => {
      await expectCode(() => parseDataPlanePath(raw), "invalid_request");
    });
  }
});
