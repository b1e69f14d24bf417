import { mkdirSync, renameSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expectCode, namesIn, RESOLVER_KINDS, UID } from "./harness.ts";
import { workspacePerTest } from "./workspace-per-test.ts";

// The attacker's side, paths: a symlinked Workdir, UserWorkspace or uid directory, and
// paths that try to leave by name ("..", absolute, over-long).
// Every test asserts the refusal and that nothing happened: workspacePerTest checks outside/,
// and each test checks the workspace entries it involved.

describe.each(RESOLVER_KINDS)("containment (%s resolver)", (kind) => {
  const env = workspacePerTest(kind);

  describe("symlinked Workdir and UserWorkspace", () => {
    it("refuses a Workdir that is a symlink, managed or linked", async () => {
      const managed = "projects/11111111-2222-4333-8444-555555555555";
      symlinkSync(env().outside, join(env().workspace, managed));
      symlinkSync(env().outside, join(env().workspace, "linked"));
      await expectCode(
        () => env().users.ensureManagedWorkdir(UID, managed),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () => env().users.openExistingWorkdir(UID, managed),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () => env().users.openExistingWorkdir(UID, "linked"),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () => env().users.openExistingWorkdir(UID, "linked/dir"),
        "forbidden",
        "symlink_refused",
      );
    });

    it("refuses a Workdir below a symlinked directory", async () => {
      renameSync(join(env().workspace, "projects"), join(env().workspace, "projects.real"));
      symlinkSync("projects.real", join(env().workspace, "projects"));
      await expectCode(
        () =>
          env().users.ensureManagedWorkdir(UID, "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc"),
        "forbidden",
        "symlink_refused",
      );
    });

    it("refuses a UserWorkspace root that is a symlink, and creates nothing through it", async () => {
      const bobDir = join(env().dataRoot, "users", "bob");
      mkdirSync(bobDir);
      symlinkSync(env().outside, join(bobDir, "workspace"));
      await expectCode(() => env().users.openUserWorkspace("bob"), "forbidden", "symlink_refused");
      await expectCode(
        () => env().users.openUserWorkspace("bob", { create: true }),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () =>
          env().users.ensureManagedWorkdir("bob", "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc"),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () => env().users.openExistingWorkdir("bob", "dir"),
        "forbidden",
        "symlink_refused",
      );
      expect(namesIn(env().outside)).toEqual(["dir", "secret.txt"]);
    });

    it("refuses a uid directory that is a symlink", async () => {
      symlinkSync(env().userDir, join(env().dataRoot, "users", "carol"));
      await expectCode(
        () =>
          env().users.ensureManagedWorkdir(
            "carol",
            "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc",
          ),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () => env().users.openUserWorkspace("carol"),
        "forbidden",
        "symlink_refused",
      );
    });
  });

  describe("paths that try to leave", () => {
    const escapes = [
      "..",
      "../x",
      "a/../../x",
      "../../outside/secret.txt",
      "/etc/passwd",
      "a\\b",
      "http://x",
      "a\u0000b",
    ];
    for (const path of escapes) {
      it(`refuses ${JSON.stringify(path)} for every operation`, async () => {
        await expectCode(() => env().fs.readFile(path), "forbidden", "path_outside_workdir");
        await expectCode(() => env().fs.stat(path), "forbidden", "path_outside_workdir");
        await expectCode(() => env().fs.list(path), "forbidden", "path_outside_workdir");
        await expectCode(
          () => env().fs.writeFile(path, "pwned"),
          "forbidden",
          "path_outside_workdir",
        );
        await expectCode(() => env().fs.mkdir(path), "forbidden", "path_outside_workdir");
        await expectCode(() => env().fs.remove(path), "forbidden", "path_outside_workdir");
        await expectCode(() => env().fs.copy("x", path), "forbidden", "path_outside_workdir");
        await expectCode(() => env().fs.move(path, "x"), "forbidden", "path_outside_workdir");
        expect(namesIn(env().workdir)).toEqual([]);
      });
    }

    it("refuses malformed paths as invalid", async () => {
      for (const path of ["a//b", "a/", "./a", "a/./b", "a\u0001b"]) {
        await expectCode(() => env().fs.writeFile(path, "x"), "invalid_request");
      }
      expect(namesIn(env().workdir)).toEqual([]);
    });

    it("bounds names at 255 bytes and paths at 4096 bytes", async () => {
      await env().fs.writeFile("n".repeat(255), "ok");
      await expectCode(() => env().fs.writeFile("n".repeat(256), "x"), "invalid_request");
      // 128 × 'é' is 256 bytes in UTF-8, though only 128 characters.
      await expectCode(() => env().fs.writeFile("é".repeat(128), "x"), "invalid_request");
      const deep = Array.from({ length: 21 }, () => "d".repeat(200)).join("/");
      expect(Buffer.byteLength(deep)).toBeGreaterThan(4096);
      await expectCode(() => env().fs.mkdir(deep, { parents: true }), "invalid_request");
      expect(namesIn(env().workdir)).toEqual(["n".repeat(255)]);
    });
  });
});
