import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { chunks, expectCode, mode, namesIn, RESOLVER_KINDS } from "./harness.ts";
import { workspacePerTest } from "./workspace-per-test.ts";

describe.each(RESOLVER_KINDS)("writes (%s resolver)", (kind) => {
  const env = workspacePerTest(kind);

  describe("no-clobber", () => {
    it("writes a new file 0600 and leaves no temp file", async () => {
      const info = await env().fs.writeFile("a.txt", "hello");
      expect(info).toMatchObject({ name: "a.txt", type: "file", size: 5 });
      expect(readFileSync(env().at("a.txt"), "utf8")).toBe("hello");
      expect(mode(env().at("a.txt"))).toBe(0o600);
      expect(namesIn(env().workdir)).toEqual(["a.txt"]);
    });

    it("an existing file is a conflict and keeps its bytes and mode", async () => {
      writeFileSync(env().at("a.txt"), "original");
      chmodSync(env().at("a.txt"), 0o644);
      await expectCode(() => env().fs.writeFile("a.txt", "new"), "conflict", "name_exists");
      await expectCode(() => env().fs.writeFile("a.txt", chunks(["n", "e", "w"])), "conflict");
      expect(readFileSync(env().at("a.txt"), "utf8")).toBe("original");
      expect(mode(env().at("a.txt"))).toBe(0o644);
      expect(namesIn(env().workdir)).toEqual(["a.txt"]);
    });

    it("a directory at the name is a conflict, with or without overwrite", async () => {
      mkdirSync(env().at("d"));
      await expectCode(() => env().fs.writeFile("d", "x"), "conflict");
      await expectCode(() => env().fs.writeFile("d", "x", { overwrite: true }), "conflict");
      expect(namesIn(env().at("d"))).toEqual([]);
      expect(namesIn(env().workdir)).toEqual(["d"]);
    });

    it("a missing parent or a parent that is a file is not_found; the root is invalid", async () => {
      writeFileSync(env().at("file"), "x");
      await expectCode(() => env().fs.writeFile("missing/a.txt", "x"), "not_found");
      await expectCode(() => env().fs.writeFile("file/a.txt", "x"), "not_found");
      await expectCode(() => env().fs.writeFile("", "x"), "invalid_request");
      expect(namesIn(env().workdir)).toEqual(["file"]);
    });

    it("`parents` creates missing directories 0700 (uploads/ on first use)", async () => {
      await env().fs.writeFile("uploads/attachments/a.md", "x", { parents: true });
      expect(mode(env().at("uploads"))).toBe(0o700);
      expect(mode(env().at("uploads/attachments"))).toBe(0o700);
      expect(mode(env().at("uploads/attachments/a.md"))).toBe(0o600);
    });

    it("fsync still publishes the same way", async () => {
      await env().fs.writeFile("synced.txt", chunks(["a", "b"]), { fsync: true });
      expect(readFileSync(env().at("synced.txt"), "utf8")).toBe("ab");
    });
  });

  describe("overwrite", () => {
    it("replaces the file atomically (new inode, 0600) and never modifies the old inode", async () => {
      writeFileSync(env().at("a.txt"), "old");
      chmodSync(env().at("a.txt"), 0o644);
      const oldIno = lstatSync(env().at("a.txt")).ino;
      await env().fs.writeFile("a.txt", "new", { overwrite: true });
      expect(readFileSync(env().at("a.txt"), "utf8")).toBe("new");
      expect(lstatSync(env().at("a.txt")).ino).not.toBe(oldIno);
      expect(mode(env().at("a.txt"))).toBe(0o600);
      expect(namesIn(env().workdir)).toEqual(["a.txt"]);
    });
  });

  describe("streaming", () => {
    it("over the byte limit: payload_too_large, the source stops being read, nothing is left", async () => {
      let pulled = 0;
      let finished = false;
      async function* source() {
        try {
          for (let i = 0; i < 1000; i++) {
            pulled++;
            yield Buffer.alloc(1024, 1);
          }
        } finally {
          finished = true;
        }
      }
      await expectCode(
        () => env().fs.writeFile("big.bin", source(), { maxBytes: 10 * 1024 }),
        "payload_too_large",
      );
      expect(pulled).toBe(11);
      expect(finished).toBe(true);
      expect(namesIn(env().workdir)).toEqual([]);
    });

    it("a web ReadableStream works as a source", async () => {
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("web "));
          controller.enqueue(new TextEncoder().encode("stream"));
          controller.close();
        },
      });
      await env().fs.writeFile("web.txt", stream);
      expect(readFileSync(env().at("web.txt"), "utf8")).toBe("web stream");
    });

    it("an abort mid-write rejects with the abort reason and leaves nothing", async () => {
      const controller = new AbortController();
      async function* source() {
        yield Buffer.from("first");
        controller.abort();
        yield Buffer.from("second");
      }
      await expect(
        env().fs.writeFile("a.txt", source(), { signal: controller.signal }),
      ).rejects.toMatchObject({
        name: "AbortError",
      });
      expect(namesIn(env().workdir)).toEqual([]);
    });

    it("a failing source leaves nothing", async () => {
      async function* source() {
        yield Buffer.from("partial");
        throw new Error("client went away");
      }
      await expect(env().fs.writeFile("a.txt", source())).rejects.toThrow("client went away");
      expect(namesIn(env().workdir)).toEqual([]);
    });
  });

  describe("races during a write (the sandbox acts between two chunks)", () => {
    it("rename-over: a file renamed onto the target mid-write wins; ours is a conflict", async () => {
      async function* source() {
        yield Buffer.from("ours-1");
        writeFileSync(env().at(".attacker"), "theirs");
        renameSync(env().at(".attacker"), env().at("target.txt"));
        yield Buffer.from("ours-2");
      }
      await expectCode(() => env().fs.writeFile("target.txt", source()), "conflict", "name_exists");
      expect(readFileSync(env().at("target.txt"), "utf8")).toBe("theirs");
      expect(namesIn(env().workdir)).toEqual(["target.txt"]);
    });

    it("a dangling symlink renamed onto the target mid-write: conflict, link untouched", async () => {
      async function* source() {
        yield Buffer.from("ours");
        symlinkSync(join(env().outside, "planted.txt"), env().at(".l"));
        renameSync(env().at(".l"), env().at("target.txt"));
      }
      await expectCode(() => env().fs.writeFile("target.txt", source()), "conflict");
      expect(lstatSync(env().at("target.txt")).isSymbolicLink()).toBe(true);
      expect(existsSync(join(env().outside, "planted.txt"))).toBe(false);
    });

    it("the parent swapped for a symlink to outside mid-write: the bytes stay in the directory we opened", async () => {
      mkdirSync(env().at("dir"));
      async function* source() {
        yield Buffer.from("ours");
        renameSync(env().at("dir"), env().at("dir.moved"));
        symlinkSync(env().outside, env().at("dir"));
      }
      await env().fs.writeFile("dir/a.txt", source());
      expect(readFileSync(env().at("dir.moved/a.txt"), "utf8")).toBe("ours");
      expect(namesIn(env().outside)).toEqual(["dir", "secret.txt"]);
    });

    it("overwrite while the target is swapped for a symlink: the link is replaced, not followed", async () => {
      writeFileSync(env().at("t.txt"), "old");
      async function* source() {
        yield Buffer.from("ours");
        renameSync(env().at("t.txt"), env().at("t.old"));
        symlinkSync(join(env().outside, "secret.txt"), env().at("t.txt"));
      }
      await env().fs.writeFile("t.txt", source(), { overwrite: true });
      expect(lstatSync(env().at("t.txt")).isFile()).toBe(true);
      expect(readFileSync(env().at("t.txt"), "utf8")).toBe("ours");
    });
  });
});
