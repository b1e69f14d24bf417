import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  expectCode,
  namesIn,
  RESOLVER_KINDS,
  setupWorkspace,
  type WorkspaceEnv,
} from "./harness.ts";

describe.each(RESOLVER_KINDS)("directories and trees (%s resolver)", (kind) => {
  let env: WorkspaceEnv;
  beforeEach(async () => {
    env = await setupWorkspace(kind, {
      maxListEntries: 50,
      maxTreeEntries: 40,
      maxTreeDepth: 6,
    });
  });
  afterEach(() => env.finish());

  describe("list", () => {
    it("shows regular files and real directories, sorted, with sizes", async () => {
      mkdirSync(env.at("b-dir"));
      writeFileSync(env.at("a.txt"), "abc");
      symlinkSync("a.txt", env.at("c-link"));
      const { items, truncated } = await env.fs.list("");
      expect(truncated).toBe(false);
      expect(items.map((i) => [i.name, i.type])).toEqual([
        ["a.txt", "file"],
        ["b-dir", "dir"],
      ]);
      expect(items[0]?.size).toBe(3);
    });

    it("hides names the API cannot address and in-flight temp files", async () => {
      writeFileSync(Buffer.from(`${env.workdir}/bad-\xff.txt`, "latin1"), "x");
      writeFileSync(env.at("ctl\u0001.txt"), "x");
      writeFileSync(env.at(".wc-tmp-0123456789abcdef"), "x");
      writeFileSync(env.at("ok.txt"), "x");
      expect((await env.fs.list("")).items.map((i) => i.name)).toEqual(["ok.txt"]);
    });

    it("is bounded, hidden entries included", async () => {
      for (let i = 0; i < 60; i++) symlinkSync("x", env.at(`l${i}`));
      writeFileSync(env.at("real.txt"), "x");
      const { items, truncated } = await env.fs.list("");
      expect(truncated).toBe(true);
      expect(items.length).toBeLessThanOrEqual(1);
      expect((await env.fs.list("", { maxEntries: 1000 })).items.map((i) => i.name)).toEqual([
        "real.txt",
      ]);
    });

    it("a file is invalid, a missing directory not_found", async () => {
      writeFileSync(env.at("f"), "x");
      await expectCode(() => env.fs.list("f"), "invalid_request", "not_a_directory");
      await expectCode(() => env.fs.list("nope"), "not_found");
    });
  });

  describe("search", () => {
    beforeEach(() => {
      mkdirSync(env.at("a/b/c/d"), { recursive: true });
      writeFileSync(env.at("report.md"), "x");
      writeFileSync(env.at("a/Report-2.md"), "x");
      writeFileSync(env.at("a/b/c/d/report-deep.md"), "x");
      symlinkSync(env.outside, env.at("a/report-link"));
    });

    it("finds matches breadth-first, case-insensitively, never through symlinks", async () => {
      const { items, truncated } = await env.fs.search("", { query: "report" });
      expect(truncated).toBe(false);
      expect(items.map((i) => i.path)).toEqual([
        "report.md",
        "a/Report-2.md",
        "a/b/c/d/report-deep.md",
      ]);
    });

    it("is bounded by depth, results and entries visited", async () => {
      const shallow = await env.fs.search("", { query: "report", maxDepth: 1 });
      expect(shallow.items.map((i) => i.path)).toEqual(["report.md", "a/Report-2.md"]);
      expect(shallow.truncated).toBe(true);
      const few = await env.fs.search("", { query: "report", maxResults: 1 });
      expect(few.items.map((i) => i.path)).toEqual(["report.md"]);
      expect(few.truncated).toBe(true);
      const visited = await env.fs.search("", { maxVisited: 2 });
      expect(visited.truncated).toBe(true);
      expect(visited.items.length).toBeLessThanOrEqual(2);
    });

    it("filters by type and searches below a subdirectory", async () => {
      const dirs = await env.fs.search("a", { type: "dir" });
      expect(dirs.items.map((i) => i.path)).toEqual(["a/b", "a/b/c", "a/b/c/d"]);
    });
  });

  describe("mkdir and delete", () => {
    it("mkdir: 201-style info, existing is a conflict, missing parent not_found", async () => {
      expect(await env.fs.mkdir("d")).toMatchObject({ name: "d", type: "dir" });
      await expectCode(() => env.fs.mkdir("d"), "conflict");
      await expectCode(() => env.fs.mkdir("x/y"), "not_found");
      await expectCode(() => env.fs.mkdir(""), "conflict");
      expect(namesIn(env.workdir)).toEqual(["d"]);
    });

    it("ensureDir is idempotent, refuses a file in the way", async () => {
      await env.fs.ensureDir("outputs/x");
      await env.fs.ensureDir("outputs/x");
      writeFileSync(env.at("f"), "x");
      await expectCode(() => env.fs.ensureDir("f"), "invalid_request", "not_a_directory");
      await expectCode(() => env.fs.ensureDir("f/g"), "not_found");
    });

    it("refuses to delete the root; a missing entry is not_found", async () => {
      await expectCode(() => env.fs.remove(""), "invalid_request", "workdir_root");
      await expectCode(() => env.fs.remove("nope"), "not_found");
      await expectCode(() => env.fs.move("", "x"), "invalid_request", "workdir_root");
      expect(existsSync(env.workdir)).toBe(true);
    });

    it("a non-empty directory needs `recursive`", async () => {
      mkdirSync(env.at("d/e"), { recursive: true });
      writeFileSync(env.at("d/e/f"), "x");
      await expectCode(() => env.fs.remove("d"), "conflict", "directory_not_empty");
      expect(existsSync(env.at("d/e/f"))).toBe(true);
      await env.fs.remove("d", { recursive: true });
      expect(namesIn(env.workdir)).toEqual([]);
    });

    it("a recursive delete removes names that are not UTF-8 too", async () => {
      mkdirSync(env.at("d"));
      writeFileSync(Buffer.from(`${env.workdir}/d/\xff\xfe`, "latin1"), "x");
      await env.fs.remove("d", { recursive: true });
      expect(namesIn(env.workdir)).toEqual([]);
    });

    it("a tree over the entry or depth bound is refused before anything is deleted", async () => {
      mkdirSync(env.at("wide"));
      for (let i = 0; i < 45; i++) writeFileSync(env.at(`wide/f${i}`), "x");
      await expectCode(() => env.fs.remove("wide", { recursive: true }), "payload_too_large");
      expect(namesIn(env.at("wide")).length).toBe(45);
      mkdirSync(env.at("deep/1/2/3/4/5/6/7"), { recursive: true });
      await expectCode(() => env.fs.remove("deep", { recursive: true }), "payload_too_large");
      expect(existsSync(env.at("deep/1/2/3/4/5/6/7"))).toBe(true);
    });
  });

  describe("copy and move", () => {
    beforeEach(() => {
      mkdirSync(env.at("src/sub"), { recursive: true });
      writeFileSync(env.at("src/a.txt"), "A");
      writeFileSync(env.at("src/sub/b.txt"), "B");
    });

    it("copies a file (no-clobber unless overwrite) and a tree (all at once)", async () => {
      await env.fs.copy("src/a.txt", "a-copy.txt");
      expect(readFileSync(env.at("a-copy.txt"), "utf8")).toBe("A");
      await expectCode(() => env.fs.copy("src/sub/b.txt", "a-copy.txt"), "conflict");
      await env.fs.copy("src/sub/b.txt", "a-copy.txt", { overwrite: true });
      expect(readFileSync(env.at("a-copy.txt"), "utf8")).toBe("B");
      await expectCode(() => env.fs.copy("src", "dst"), "invalid_request", "is_a_directory");
      await env.fs.copy("src", "dst", { recursive: true });
      expect(readFileSync(env.at("dst/sub/b.txt"), "utf8")).toBe("B");
      await expectCode(() => env.fs.copy("src", "dst", { recursive: true }), "conflict");
      await expectCode(
        () => env.fs.copy("src", "src/sub/inner", { recursive: true }),
        "invalid_request",
      );
      expect(namesIn(env.workdir)).toEqual(["a-copy.txt", "dst", "src"]);
    });

    it("a tree copy that fails (symlink inside, over a limit) leaves no trace", async () => {
      symlinkSync(env.outside, env.at("src/sub/escape"));
      await expectCode(
        () => env.fs.copy("src", "dst", { recursive: true }),
        "forbidden",
        "symlink_refused",
      );
      expect(namesIn(env.workdir)).toEqual(["src"]);
      await env.fs.remove("src/sub/escape");
      for (let i = 0; i < 45; i++) writeFileSync(env.at(`src/f${i}`), "x");
      await expectCode(() => env.fs.copy("src", "dst", { recursive: true }), "payload_too_large");
      expect(namesIn(env.workdir)).toEqual(["src"]);
    });

    it("moves files and directories, no-clobber unless overwrite", async () => {
      await env.fs.move("src/a.txt", "a.txt");
      expect(readFileSync(env.at("a.txt"), "utf8")).toBe("A");
      writeFileSync(env.at("other.txt"), "O");
      await expectCode(() => env.fs.move("a.txt", "other.txt"), "conflict");
      expect(readFileSync(env.at("other.txt"), "utf8")).toBe("O");
      await env.fs.move("a.txt", "other.txt", { overwrite: true });
      expect(readFileSync(env.at("other.txt"), "utf8")).toBe("A");
      await env.fs.move("src", "moved");
      expect(readFileSync(env.at("moved/sub/b.txt"), "utf8")).toBe("B");
      await expectCode(
        () => env.fs.move("moved", "moved/sub/x"),
        "invalid_request",
        "move_into_itself",
      );
      await expectCode(() => env.fs.move("nope", "x"), "not_found");
      expect(namesIn(env.workdir)).toEqual(["moved", "other.txt"]);
    });
  });

  describe("subdirectory binding", () => {
    it("a WorkspaceFs bound to a subdirectory cannot reach its parent", async () => {
      mkdirSync(env.at("inner"));
      writeFileSync(env.at("sibling.txt"), "s");
      const inner = await env.fs.openSubdir("inner");
      try {
        await inner.writeFile("x.txt", "x");
        expect(readFileSync(join(env.workdir, "inner", "x.txt"), "utf8")).toBe("x");
        await expectCode(() => inner.readFile("../sibling.txt"), "forbidden");
        expect((await inner.list("")).items.map((i) => i.name)).toEqual(["x.txt"]);
      } finally {
        inner.close();
      }
      await expect(inner.list("")).rejects.toThrow("closed");
    });
  });
});
