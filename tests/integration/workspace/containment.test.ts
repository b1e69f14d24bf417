import { execFileSync } from "node:child_process";
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  expectCode,
  namesIn,
  RESOLVER_KINDS,
  SECRET,
  setupWorkspace,
  timeout,
  UID,
  type WorkspaceEnv,
} from "./harness.ts";

// The attacker's side: the sandbox user controls every byte of the workspace and can plant
// symlinks, hard links, FIFOs, sockets and (as root on the host, for the test) devices.
// Every test asserts the refusal and that nothing happened: afterEach checks that outside/
// is byte-for-byte unchanged, and each test checks the workspace entries it involved.

describe.each(RESOLVER_KINDS)("containment (%s resolver)", (kind) => {
  let env: WorkspaceEnv;
  beforeEach(async () => {
    env = await setupWorkspace(kind);
  });
  afterEach(() => env.finish());

  it("resolves with the requested resolver", () => {
    expect(env.fs.resolverKind).toBe(kind);
  });

  describe("symlink as the final component", () => {
    beforeEach(() => {
      symlinkSync(join(env.outside, "secret.txt"), env.at("link"));
    });

    it("refuses read, stat and open-for-stream", async () => {
      await expectCode(() => env.fs.readFile("link"), "forbidden", "symlink_refused");
      await expectCode(() => env.fs.stat("link"), "forbidden", "symlink_refused");
      await expectCode(() => env.fs.openRead("link"), "forbidden", "symlink_refused");
    });

    it("a no-clobber write is a conflict and leaves the link as it was", async () => {
      await expectCode(() => env.fs.writeFile("link", "pwned"), "conflict", "name_exists");
      expect(readlinkSync(env.at("link"))).toBe(join(env.outside, "secret.txt"));
      expect(namesIn(env.workdir)).toEqual(["link"]);
    });

    it("mkdir over it is a conflict", async () => {
      await expectCode(() => env.fs.mkdir("link"), "conflict");
      expect(lstatSync(env.at("link")).isSymbolicLink()).toBe(true);
    });

    it("overwrite replaces the link itself, never writes through it", async () => {
      await env.fs.writeFile("link", "mine", { overwrite: true });
      expect(lstatSync(env.at("link")).isFile()).toBe(true);
      expect(readFileSync(env.at("link"), "utf8")).toBe("mine");
      expect(readFileSync(join(env.outside, "secret.txt"), "utf8")).toBe(SECRET);
    });

    it("delete removes the link, not its target", async () => {
      await env.fs.remove("link");
      expect(existsSync(env.at("link"))).toBe(false);
      expect(readFileSync(join(env.outside, "secret.txt"), "utf8")).toBe(SECRET);
    });

    it("is hidden from listings and searches", async () => {
      writeFileSync(env.at("real.txt"), "x");
      expect((await env.fs.list("")).items.map((i) => i.name)).toEqual(["real.txt"]);
      expect((await env.fs.search("")).items.map((i) => i.path)).toEqual(["real.txt"]);
    });

    it("refuses copy and move from it", async () => {
      await expectCode(() => env.fs.copy("link", "copy.txt"), "forbidden", "symlink_refused");
      await expectCode(() => env.fs.move("link", "moved.txt"), "forbidden", "symlink_refused");
      expect(namesIn(env.workdir)).toEqual(["link"]);
    });
  });

  describe("symlink as a middle component (to a directory)", () => {
    beforeEach(() => {
      symlinkSync(env.outside, env.at("out"));
      // A symlink to a directory inside the Workdir is refused just the same.
      mkdirSync(env.at("real"));
      writeFileSync(env.at("real/file.txt"), "inside");
      symlinkSync("real", env.at("alias"));
    });

    for (const dir of ["out", "alias"]) {
      it(`refuses every operation through '${dir}/'`, async () => {
        const file = dir === "out" ? "secret.txt" : "file.txt";
        await expectCode(() => env.fs.readFile(`${dir}/${file}`), "forbidden", "symlink_refused");
        await expectCode(() => env.fs.stat(`${dir}/${file}`), "forbidden", "symlink_refused");
        await expectCode(() => env.fs.list(dir), "forbidden", "symlink_refused");
        await expectCode(() => env.fs.search(dir), "forbidden", "symlink_refused");
        await expectCode(
          () => env.fs.writeFile(`${dir}/new.txt`, "pwned"),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(
          () => env.fs.writeFile(`${dir}/${file}`, "pwned", { overwrite: true }),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(() => env.fs.mkdir(`${dir}/newdir`), "forbidden", "symlink_refused");
        await expectCode(
          () => env.fs.mkdir(`${dir}/a/b`, { parents: true }),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(() => env.fs.remove(`${dir}/${file}`), "forbidden", "symlink_refused");
        await expectCode(
          () => env.fs.copy(`${dir}/${file}`, "c.txt"),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(
          () => env.fs.copy("real/file.txt", `${dir}/c.txt`),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(
          () => env.fs.move(`${dir}/${file}`, "m.txt"),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(
          () => env.fs.move("real/file.txt", `${dir}/m.txt`),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(
          () => env.fs.writeBatch(dir, [{ name: "b.txt", source: "pwned" }]),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(() => env.fs.openSubdir(dir), "forbidden", "symlink_refused");
        expect(namesIn(env.at("real"))).toEqual(["file.txt"]);
        expect(namesIn(env.workdir)).toEqual(["alias", "out", "real"]);
      });
    }

    it("removing the link itself works and leaves the target directory alone", async () => {
      await env.fs.remove("out");
      await env.fs.remove("alias");
      expect(namesIn(env.workdir)).toEqual(["real"]);
      expect(namesIn(env.outside)).toEqual(["dir", "secret.txt"]);
    });

    it("a recursive delete of a tree holding a directory symlink removes the link only", async () => {
      mkdirSync(env.at("tree/sub"), { recursive: true });
      symlinkSync(env.outside, env.at("tree/sub/escape"));
      await env.fs.remove("tree", { recursive: true });
      expect(existsSync(env.at("tree"))).toBe(false);
      expect(namesIn(env.outside)).toEqual(["dir", "secret.txt"]);
    });
  });

  describe("dangling symlink as a write target", () => {
    beforeEach(() => {
      symlinkSync(join(env.outside, "created-through-link.txt"), env.at("dangling"));
    });

    it("write, batch and mkdir are conflicts; the link and its target are untouched", async () => {
      await expectCode(() => env.fs.writeFile("dangling", "pwned"), "conflict", "name_exists");
      await expectCode(() => env.fs.writeFile("dangling", (async function* () {})()), "conflict");
      await expectCode(
        () => env.fs.writeBatch("", [{ name: "dangling", source: "pwned" }]),
        "conflict",
        "name_exists",
      );
      await expectCode(() => env.fs.mkdir("dangling"), "conflict");
      await expectCode(() => env.fs.copy("nothing", "dangling"), "not_found");
      writeFileSync(env.at("src.txt"), "x");
      await expectCode(() => env.fs.copy("src.txt", "dangling"), "conflict");
      await expectCode(() => env.fs.move("src.txt", "dangling"), "conflict");
      expect(readlinkSync(env.at("dangling"))).toBe(join(env.outside, "created-through-link.txt"));
      expect(existsSync(join(env.outside, "created-through-link.txt"))).toBe(false);
      expect(namesIn(env.workdir)).toEqual(["dangling", "src.txt"]);
    });
  });

  describe("symlinked Workdir and UserWorkspace", () => {
    it("refuses a Workdir that is a symlink, managed or linked", async () => {
      const managed = "projects/11111111-2222-4333-8444-555555555555";
      symlinkSync(env.outside, join(env.workspace, managed));
      symlinkSync(env.outside, join(env.workspace, "linked"));
      await expectCode(
        () => env.users.ensureManagedWorkdir(UID, managed),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () => env.users.openExistingWorkdir(UID, managed),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () => env.users.openExistingWorkdir(UID, "linked"),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () => env.users.openExistingWorkdir(UID, "linked/dir"),
        "forbidden",
        "symlink_refused",
      );
    });

    it("refuses a Workdir below a symlinked directory", async () => {
      renameSync(join(env.workspace, "projects"), join(env.workspace, "projects.real"));
      symlinkSync("projects.real", join(env.workspace, "projects"));
      await expectCode(
        () => env.users.ensureManagedWorkdir(UID, "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc"),
        "forbidden",
        "symlink_refused",
      );
    });

    it("refuses a UserWorkspace root that is a symlink, and creates nothing through it", async () => {
      const bobDir = join(env.dataRoot, "users", "bob");
      mkdirSync(bobDir);
      symlinkSync(env.outside, join(bobDir, "workspace"));
      await expectCode(() => env.users.openUserWorkspace("bob"), "forbidden", "symlink_refused");
      await expectCode(
        () => env.users.openUserWorkspace("bob", { create: true }),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () =>
          env.users.ensureManagedWorkdir("bob", "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc"),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(
        () => env.users.openExistingWorkdir("bob", "dir"),
        "forbidden",
        "symlink_refused",
      );
      expect(namesIn(env.outside)).toEqual(["dir", "secret.txt"]);
    });

    it("refuses a uid directory that is a symlink", async () => {
      symlinkSync(env.userDir, join(env.dataRoot, "users", "carol"));
      await expectCode(
        () =>
          env.users.ensureManagedWorkdir("carol", "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc"),
        "forbidden",
        "symlink_refused",
      );
      await expectCode(() => env.users.openUserWorkspace("carol"), "forbidden", "symlink_refused");
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
        await expectCode(() => env.fs.readFile(path), "forbidden", "path_outside_workdir");
        await expectCode(() => env.fs.stat(path), "forbidden", "path_outside_workdir");
        await expectCode(() => env.fs.list(path), "forbidden", "path_outside_workdir");
        await expectCode(
          () => env.fs.writeFile(path, "pwned"),
          "forbidden",
          "path_outside_workdir",
        );
        await expectCode(() => env.fs.mkdir(path), "forbidden", "path_outside_workdir");
        await expectCode(() => env.fs.remove(path), "forbidden", "path_outside_workdir");
        await expectCode(() => env.fs.copy("x", path), "forbidden", "path_outside_workdir");
        await expectCode(() => env.fs.move(path, "x"), "forbidden", "path_outside_workdir");
        expect(namesIn(env.workdir)).toEqual([]);
      });
    }

    it("refuses malformed paths as invalid", async () => {
      for (const path of ["a//b", "a/", "./a", "a/./b", "a\u0001b"]) {
        await expectCode(() => env.fs.writeFile(path, "x"), "invalid_request");
      }
      expect(namesIn(env.workdir)).toEqual([]);
    });

    it("bounds names at 255 bytes and paths at 4096 bytes", async () => {
      await env.fs.writeFile("n".repeat(255), "ok");
      await expectCode(() => env.fs.writeFile("n".repeat(256), "x"), "invalid_request");
      // 128 × 'é' is 256 bytes in UTF-8, though only 128 characters.
      await expectCode(() => env.fs.writeFile("é".repeat(128), "x"), "invalid_request");
      const deep = Array.from({ length: 21 }, () => "d".repeat(200)).join("/");
      expect(Buffer.byteLength(deep)).toBeGreaterThan(4096);
      await expectCode(() => env.fs.mkdir(deep, { parents: true }), "invalid_request");
      expect(namesIn(env.workdir)).toEqual(["n".repeat(255)]);
    });
  });

  describe("hard link to an outside file (docs/decisions/0003-hard-links.md)", () => {
    beforeEach(() => {
      // A sandbox cannot make this link (link(2) across mounts is EXDEV); the host can.
      linkSync(join(env.outside, "secret.txt"), env.at("hl"));
    });

    it("reads it: it is a regular file of the workspace (documented)", async () => {
      expect((await env.fs.readFile("hl")).toString()).toBe(SECRET);
    });

    it("never writes through it: overwrite replaces the name, the outside inode keeps its bytes", async () => {
      await expectCode(() => env.fs.writeFile("hl", "pwned"), "conflict");
      await env.fs.writeFile("hl", "replaced", { overwrite: true });
      expect(readFileSync(env.at("hl"), "utf8")).toBe("replaced");
      expect(readFileSync(join(env.outside, "secret.txt"), "utf8")).toBe(SECRET);
      expect(lstatSync(join(env.outside, "secret.txt")).nlink).toBe(1);
    });

    it("delete unlinks only the workspace name", async () => {
      await env.fs.remove("hl");
      expect(existsSync(env.at("hl"))).toBe(false);
      expect(readFileSync(join(env.outside, "secret.txt"), "utf8")).toBe(SECRET);
    });

    it("copy makes an independent file", async () => {
      await env.fs.copy("hl", "copy.txt");
      expect(lstatSync(env.at("copy.txt")).ino).not.toBe(lstatSync(env.at("hl")).ino);
    });
  });

  describe("special files", () => {
    let server: Server | undefined;
    afterEach(async () => {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = undefined;
    });

    const makers: Record<string, (path: string) => Promise<void>> = {
      fifo: async (path) => {
        execFileSync("mkfifo", [path]);
      },
      socket: async (path) => {
        server = createServer();
        await new Promise<void>((resolve) => server?.listen(path, resolve));
      },
      device: async (path) => {
        // char 1:3 is /dev/null; needs root (CAP_MKNOD), which the test machines have.
        execFileSync("mknod", [path, "c", "1", "3"]);
      },
    };

    for (const [type, make] of Object.entries(makers)) {
      it(`a ${type}: read refused without blocking, hidden from listings, never deleted or copied`, async () => {
        mkdirSync(env.at("box"));
        writeFileSync(env.at("box/keep.txt"), "keep");
        await make(env.at("box/special"));
        const read = env.fs.readFile("box/special").then(
          () => "read",
          (err: unknown) => err,
        );
        const outcome = await Promise.race([read, timeout(5_000)]);
        expect(outcome).not.toBe("timeout");
        await expectCode(
          () => read.then((r) => Promise.reject(r)),
          "forbidden",
          "special_file_refused",
        );
        await expectCode(() => env.fs.openRead("box/special"), "forbidden", "special_file_refused");
        await expectCode(() => env.fs.stat("box/special"), "forbidden", "special_file_refused");
        expect((await env.fs.list("box")).items.map((i) => i.name)).toEqual(["keep.txt"]);
        expect((await env.fs.search("")).items.map((i) => i.path)).toEqual(["box", "box/keep.txt"]);
        await expectCode(() => env.fs.writeFile("box/special", "x"), "conflict");
        await expectCode(() => env.fs.remove("box/special"), "forbidden", "special_file_refused");
        await expectCode(
          () => env.fs.copy("box/special", "c"),
          "forbidden",
          "special_file_refused",
        );
        await expectCode(
          () => env.fs.copy("box", "boxcopy", { recursive: true }),
          "forbidden",
          "special_file_refused",
        );
        await expectCode(
          () => env.fs.move("box/special", "m"),
          "forbidden",
          "special_file_refused",
        );
        // The recursive delete scans first: nothing is removed when the tree holds one.
        await expectCode(
          () => env.fs.remove("box", { recursive: true }),
          "forbidden",
          "special_file_refused",
        );
        expect(namesIn(env.at("box"))).toEqual(["keep.txt", "special"]);
        expect(namesIn(env.workdir)).toEqual(["box"]);
      });
    }
  });
});
