import { execFileSync } from "node:child_process";
import { existsSync, linkSync, lstatSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { expectCode, namesIn, RESOLVER_KINDS, SECRET, timeout } from "./harness.ts";
import { workspacePerTest } from "./workspace-per-test.ts";

// The attacker's side, special files: hard links to outside files, FIFOs, sockets and (as
// root on the host, for the test) devices planted in the workspace.
// Every test asserts the refusal and that nothing happened: workspacePerTest checks outside/,
// and each test checks the workspace entries it involved.

describe.each(RESOLVER_KINDS)("containment (%s resolver)", (kind) => {
  const env = workspacePerTest(kind);

  describe("hard link to an outside file (docs/decisions/0003-hard-links.md)", () => {
    beforeEach(() => {
      // A sandbox cannot make this link (link(2) across mounts is EXDEV); the host can.
      linkSync(join(env().outside, "secret.txt"), env().at("hl"));
    });

    it("reads it: it is a regular file of the workspace (documented)", async () => {
      expect((await env().fs.readFile("hl")).toString()).toBe(SECRET);
    });

    it("never writes through it: overwrite replaces the name, the outside inode keeps its bytes", async () => {
      await expectCode(() => env().fs.writeFile("hl", "pwned"), "conflict");
      await env().fs.writeFile("hl", "replaced", { overwrite: true });
      expect(readFileSync(env().at("hl"), "utf8")).toBe("replaced");
      expect(readFileSync(join(env().outside, "secret.txt"), "utf8")).toBe(SECRET);
      expect(lstatSync(join(env().outside, "secret.txt")).nlink).toBe(1);
    });

    it("delete unlinks only the workspace name", async () => {
      await env().fs.remove("hl");
      expect(existsSync(env().at("hl"))).toBe(false);
      expect(readFileSync(join(env().outside, "secret.txt"), "utf8")).toBe(SECRET);
    });

    it("copy makes an independent file", async () => {
      await env().fs.copy("hl", "copy.txt");
      expect(lstatSync(env().at("copy.txt")).ino).not.toBe(lstatSync(env().at("hl")).ino);
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
        mkdirSync(env().at("box"));
        writeFileSync(env().at("box/keep.txt"), "keep");
        await make(env().at("box/special"));
        const read = env()
          .fs.readFile("box/special")
          .then(
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
        await expectCode(
          () => env().fs.openRead("box/special"),
          "forbidden",
          "special_file_refused",
        );
        await expectCode(() => env().fs.stat("box/special"), "forbidden", "special_file_refused");
        expect((await env().fs.list("box")).items.map((i) => i.name)).toEqual(["keep.txt"]);
        expect((await env().fs.search("")).items.map((i) => i.path)).toEqual([
          "box",
          "box/keep.txt",
        ]);
        await expectCode(() => env().fs.writeFile("box/special", "x"), "conflict");
        await expectCode(() => env().fs.remove("box/special"), "forbidden", "special_file_refused");
        await expectCode(
          () => env().fs.copy("box/special", "c"),
          "forbidden",
          "special_file_refused",
        );
        await expectCode(
          () => env().fs.copy("box", "boxcopy", { recursive: true }),
          "forbidden",
          "special_file_refused",
        );
        await expectCode(
          () => env().fs.move("box/special", "m"),
          "forbidden",
          "special_file_refused",
        );
        // The recursive delete scans first: nothing is removed when the tree holds one.
        await expectCode(
          () => env().fs.remove("box", { recursive: true }),
          "forbidden",
          "special_file_refused",
        );
        expect(namesIn(env().at("box"))).toEqual(["keep.txt", "special"]);
        expect(namesIn(env().workdir)).toEqual(["box"]);
      });
    }
  });
});
