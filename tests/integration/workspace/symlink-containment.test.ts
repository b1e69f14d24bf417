import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { expectCode, namesIn, RESOLVER_KINDS, SECRET } from "./harness.ts";
import { workspacePerTest } from "./workspace-per-test.ts";

// The attacker's side, symlinks: the sandbox user controls every byte of the workspace and
// plants links as final components, middle components and dangling write targets.
// Every test asserts the refusal and that nothing happened: workspacePerTest checks outside/,
// and each test checks the workspace entries it involved.

describe.each(RESOLVER_KINDS)("containment (%s resolver)", (kind) => {
  const env = workspacePerTest(kind);

  it("resolves with the requested resolver", () => {
    expect(env().fs.resolverKind).toBe(kind);
  });

  describe("symlink as the final component", () => {
    beforeEach(() => {
      symlinkSync(join(env().outside, "secret.txt"), env().at("link"));
    });

    it("refuses read, stat and open-for-stream", async () => {
      await expectCode(() => env().fs.readFile("link"), "forbidden", "symlink_refused");
      await expectCode(() => env().fs.stat("link"), "forbidden", "symlink_refused");
      await expectCode(() => env().fs.openRead("link"), "forbidden", "symlink_refused");
    });

    it("a no-clobber write is a conflict and leaves the link as it was", async () => {
      await expectCode(() => env().fs.writeFile("link", "pwned"), "conflict", "name_exists");
      expect(readlinkSync(env().at("link"))).toBe(join(env().outside, "secret.txt"));
      expect(namesIn(env().workdir)).toEqual(["link"]);
    });

    it("mkdir over it is a conflict", async () => {
      await expectCode(() => env().fs.mkdir("link"), "conflict");
      expect(lstatSync(env().at("link")).isSymbolicLink()).toBe(true);
    });

    it("overwrite replaces the link itself, never writes through it", async () => {
      await env().fs.writeFile("link", "mine", { overwrite: true });
      expect(lstatSync(env().at("link")).isFile()).toBe(true);
      expect(readFileSync(env().at("link"), "utf8")).toBe("mine");
      expect(readFileSync(join(env().outside, "secret.txt"), "utf8")).toBe(SECRET);
    });

    it("delete removes the link, not its target", async () => {
      await env().fs.remove("link");
      expect(existsSync(env().at("link"))).toBe(false);
      expect(readFileSync(join(env().outside, "secret.txt"), "utf8")).toBe(SECRET);
    });

    it("is hidden from listings and searches", async () => {
      writeFileSync(env().at("real.txt"), "x");
      expect((await env().fs.list("")).items.map((i) => i.name)).toEqual(["real.txt"]);
      expect((await env().fs.search("")).items.map((i) => i.path)).toEqual(["real.txt"]);
    });

    it("refuses copy and move from it", async () => {
      await expectCode(() => env().fs.copy("link", "copy.txt"), "forbidden", "symlink_refused");
      await expectCode(() => env().fs.move("link", "moved.txt"), "forbidden", "symlink_refused");
      expect(namesIn(env().workdir)).toEqual(["link"]);
    });
  });

  describe("symlink as a middle component (to a directory)", () => {
    beforeEach(() => {
      symlinkSync(env().outside, env().at("out"));
      // A symlink to a directory inside the Workdir is refused just the same.
      mkdirSync(env().at("real"));
      writeFileSync(env().at("real/file.txt"), "inside");
      symlinkSync("real", env().at("alias"));
    });

    for (const dir of ["out", "alias"]) {
      it(`refuses every operation through '${dir}/'`, async () => {
        const file = dir === "out" ? "secret.txt" : "file.txt";
        await expectCode(() => env().fs.readFile(`${dir}/${file}`), "forbidden", "symlink_refused");
        await expectCode(() => env().fs.stat(`${dir}/${file}`), "forbidden", "symlink_refused");
        await expectCode(() => env().fs.list(dir), "forbidden", "symlink_refused");
        await expectCode(() => env().fs.search(dir), "forbidden", "symlink_refused");
        await expectCode(
          () => env().fs.writeFile(`${dir}/new.txt`, "pwned"),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(
          () => env().fs.writeFile(`${dir}/${file}`, "pwned", { overwrite: true }),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(() => env().fs.mkdir(`${dir}/newdir`), "forbidden", "symlink_refused");
        await expectCode(
          () => env().fs.mkdir(`${dir}/a/b`, { parents: true }),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(() => env().fs.remove(`${dir}/${file}`), "forbidden", "symlink_refused");
        await expectCode(
          () => env().fs.copy(`${dir}/${file}`, "c.txt"),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(
          () => env().fs.copy("real/file.txt", `${dir}/c.txt`),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(
          () => env().fs.move(`${dir}/${file}`, "m.txt"),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(
          () => env().fs.move("real/file.txt", `${dir}/m.txt`),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(
          () => env().fs.writeBatch(dir, [{ name: "b.txt", source: "pwned" }]),
          "forbidden",
          "symlink_refused",
        );
        await expectCode(() => env().fs.openSubdir(dir), "forbidden", "symlink_refused");
        expect(namesIn(env().at("real"))).toEqual(["file.txt"]);
        expect(namesIn(env().workdir)).toEqual(["alias", "out", "real"]);
      });
    }

    it("removing the link itself works and leaves the target directory alone", async () => {
      await env().fs.remove("out");
      await env().fs.remove("alias");
      expect(namesIn(env().workdir)).toEqual(["real"]);
      expect(namesIn(env().outside)).toEqual(["dir", "secret.txt"]);
    });

    it("a recursive delete of a tree holding a directory symlink removes the link only", async () => {
      mkdirSync(env().at("tree/sub"), { recursive: true });
      symlinkSync(env().outside, env().at("tree/sub/escape"));
      await env().fs.remove("tree", { recursive: true });
      expect(existsSync(env().at("tree"))).toBe(false);
      expect(namesIn(env().outside)).toEqual(["dir", "secret.txt"]);
    });
  });

  describe("dangling symlink as a write target", () => {
    beforeEach(() => {
      symlinkSync(join(env().outside, "created-through-link.txt"), env().at("dangling"));
    });

    it("write, batch and mkdir are conflicts; the link and its target are untouched", async () => {
      await expectCode(() => env().fs.writeFile("dangling", "pwned"), "conflict", "name_exists");
      await expectCode(() => env().fs.writeFile("dangling", (async function* () {})()), "conflict");
      await expectCode(
        () => env().fs.writeBatch("", [{ name: "dangling", source: "pwned" }]),
        "conflict",
        "name_exists",
      );
      await expectCode(() => env().fs.mkdir("dangling"), "conflict");
      await expectCode(() => env().fs.copy("nothing", "dangling"), "not_found");
      writeFileSync(env().at("src.txt"), "x");
      await expectCode(() => env().fs.copy("src.txt", "dangling"), "conflict");
      await expectCode(() => env().fs.move("src.txt", "dangling"), "conflict");
      expect(readlinkSync(env().at("dangling"))).toBe(
        join(env().outside, "created-through-link.txt"),
      );
      expect(existsSync(join(env().outside, "created-through-link.txt"))).toBe(false);
      expect(namesIn(env().workdir)).toEqual(["dangling", "src.txt"]);
    });
  });
});
