import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createLibcSyscalls,
  createPathResolver,
  createUserWorkspaces,
} from "../../../agent-host/workspace/index.ts";
import {
  chunks,
  expectCode,
  namesIn,
  RESOLVER_KINDS,
  setupWorkspace,
  WORKDIR,
  type WorkspaceEnv,
} from "./harness.ts";

const mode = (path: string): number => lstatSync(path).mode & 0o7777;

describe.each(RESOLVER_KINDS)("writes (%s resolver)", (kind) => {
  let env: WorkspaceEnv;
  beforeEach(async () => {
    env = await setupWorkspace(kind);
  });
  afterEach(() => env.finish());

  describe("no-clobber", () => {
    it("writes a new file 0600 and leaves no temp file", async () => {
      const info = await env.fs.writeFile("a.txt", "hello");
      expect(info).toMatchObject({ name: "a.txt", type: "file", size: 5 });
      expect(readFileSync(env.at("a.txt"), "utf8")).toBe("hello");
      expect(mode(env.at("a.txt"))).toBe(0o600);
      expect(namesIn(env.workdir)).toEqual(["a.txt"]);
    });

    it("an existing file is a conflict and keeps its bytes and mode", async () => {
      writeFileSync(env.at("a.txt"), "original");
      chmodSync(env.at("a.txt"), 0o644);
      await expectCode(() => env.fs.writeFile("a.txt", "new"), "conflict", "name_exists");
      await expectCode(() => env.fs.writeFile("a.txt", chunks(["n", "e", "w"])), "conflict");
      expect(readFileSync(env.at("a.txt"), "utf8")).toBe("original");
      expect(mode(env.at("a.txt"))).toBe(0o644);
      expect(namesIn(env.workdir)).toEqual(["a.txt"]);
    });

    it("a directory at the name is a conflict, with or without overwrite", async () => {
      mkdirSync(env.at("d"));
      await expectCode(() => env.fs.writeFile("d", "x"), "conflict");
      await expectCode(() => env.fs.writeFile("d", "x", { overwrite: true }), "conflict");
      expect(namesIn(env.at("d"))).toEqual([]);
      expect(namesIn(env.workdir)).toEqual(["d"]);
    });

    it("a missing parent or a parent that is a file is not_found; the root is invalid", async () => {
      writeFileSync(env.at("file"), "x");
      await expectCode(() => env.fs.writeFile("missing/a.txt", "x"), "not_found");
      await expectCode(() => env.fs.writeFile("file/a.txt", "x"), "not_found");
      await expectCode(() => env.fs.writeFile("", "x"), "invalid_request");
      expect(namesIn(env.workdir)).toEqual(["file"]);
    });

    it("`parents` creates missing directories 0700 (uploads/ on first use)", async () => {
      await env.fs.writeFile("uploads/attachments/a.md", "x", { parents: true });
      expect(mode(env.at("uploads"))).toBe(0o700);
      expect(mode(env.at("uploads/attachments"))).toBe(0o700);
      expect(mode(env.at("uploads/attachments/a.md"))).toBe(0o600);
    });

    it("fsync still publishes the same way", async () => {
      await env.fs.writeFile("synced.txt", chunks(["a", "b"]), { fsync: true });
      expect(readFileSync(env.at("synced.txt"), "utf8")).toBe("ab");
    });
  });

  describe("overwrite", () => {
    it("replaces the file atomically (new inode, 0600) and never modifies the old inode", async () => {
      writeFileSync(env.at("a.txt"), "old");
      chmodSync(env.at("a.txt"), 0o644);
      const oldIno = lstatSync(env.at("a.txt")).ino;
      await env.fs.writeFile("a.txt", "new", { overwrite: true });
      expect(readFileSync(env.at("a.txt"), "utf8")).toBe("new");
      expect(lstatSync(env.at("a.txt")).ino).not.toBe(oldIno);
      expect(mode(env.at("a.txt"))).toBe(0o600);
      expect(namesIn(env.workdir)).toEqual(["a.txt"]);
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
        () => env.fs.writeFile("big.bin", source(), { maxBytes: 10 * 1024 }),
        "payload_too_large",
      );
      expect(pulled).toBe(11);
      expect(finished).toBe(true);
      expect(namesIn(env.workdir)).toEqual([]);
    });

    it("a web ReadableStream works as a source", async () => {
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("web "));
          controller.enqueue(new TextEncoder().encode("stream"));
          controller.close();
        },
      });
      await env.fs.writeFile("web.txt", stream);
      expect(readFileSync(env.at("web.txt"), "utf8")).toBe("web stream");
    });

    it("an abort mid-write rejects with the abort reason and leaves nothing", async () => {
      const controller = new AbortController();
      async function* source() {
        yield Buffer.from("first");
        controller.abort();
        yield Buffer.from("second");
      }
      await expect(
        env.fs.writeFile("a.txt", source(), { signal: controller.signal }),
      ).rejects.toMatchObject({
        name: "AbortError",
      });
      expect(namesIn(env.workdir)).toEqual([]);
    });

    it("a failing source leaves nothing", async () => {
      async function* source() {
        yield Buffer.from("partial");
        throw new Error("client went away");
      }
      await expect(env.fs.writeFile("a.txt", source())).rejects.toThrow("client went away");
      expect(namesIn(env.workdir)).toEqual([]);
    });
  });

  describe("races during a write (the sandbox acts between two chunks)", () => {
    it("rename-over: a file renamed onto the target mid-write wins; ours is a conflict", async () => {
      async function* source() {
        yield Buffer.from("ours-1");
        writeFileSync(env.at(".attacker"), "theirs");
        renameSync(env.at(".attacker"), env.at("target.txt"));
        yield Buffer.from("ours-2");
      }
      await expectCode(() => env.fs.writeFile("target.txt", source()), "conflict", "name_exists");
      expect(readFileSync(env.at("target.txt"), "utf8")).toBe("theirs");
      expect(namesIn(env.workdir)).toEqual(["target.txt"]);
    });

    it("a dangling symlink renamed onto the target mid-write: conflict, link untouched", async () => {
      async function* source() {
        yield Buffer.from("ours");
        symlinkSync(join(env.outside, "planted.txt"), env.at(".l"));
        renameSync(env.at(".l"), env.at("target.txt"));
      }
      await expectCode(() => env.fs.writeFile("target.txt", source()), "conflict");
      expect(lstatSync(env.at("target.txt")).isSymbolicLink()).toBe(true);
      expect(existsSync(join(env.outside, "planted.txt"))).toBe(false);
    });

    it("the parent swapped for a symlink to outside mid-write: the bytes stay in the directory we opened", async () => {
      mkdirSync(env.at("dir"));
      async function* source() {
        yield Buffer.from("ours");
        renameSync(env.at("dir"), env.at("dir.moved"));
        symlinkSync(env.outside, env.at("dir"));
      }
      await env.fs.writeFile("dir/a.txt", source());
      expect(readFileSync(env.at("dir.moved/a.txt"), "utf8")).toBe("ours");
      expect(namesIn(env.outside)).toEqual(["dir", "secret.txt"]);
    });

    it("overwrite while the target is swapped for a symlink: the link is replaced, not followed", async () => {
      writeFileSync(env.at("t.txt"), "old");
      async function* source() {
        yield Buffer.from("ours");
        renameSync(env.at("t.txt"), env.at("t.old"));
        symlinkSync(join(env.outside, "secret.txt"), env.at("t.txt"));
      }
      await env.fs.writeFile("t.txt", source(), { overwrite: true });
      expect(lstatSync(env.at("t.txt")).isFile()).toBe(true);
      expect(readFileSync(env.at("t.txt"), "utf8")).toBe("ours");
    });
  });

  describe("batch", () => {
    it("writes every file, 0600, in a directory created on first use", async () => {
      const infos = await env.fs.writeBatch(
        "uploads",
        [
          { name: "a.txt", source: "A" },
          { name: "b.txt", source: chunks(["B", "B"]) },
        ],
        { parents: true },
      );
      expect(infos.map((i) => [i.name, i.size])).toEqual([
        ["a.txt", 1],
        ["b.txt", 2],
      ]);
      expect(namesIn(env.at("uploads"))).toEqual(["a.txt", "b.txt"]);
      expect(mode(env.at("uploads"))).toBe(0o700);
      expect(mode(env.at("uploads/b.txt"))).toBe(0o600);
    });

    it("a duplicate name is a conflict and nothing is written", async () => {
      const err = await expectCode(
        () =>
          env.fs.writeBatch("", [
            { name: "a.txt", source: "1" },
            { name: "b.txt", source: "2" },
            { name: "a.txt", source: "3" },
          ]),
        "conflict",
        "duplicate_name",
      );
      expect(err.details?.names).toEqual(["a.txt"]);
      expect(namesIn(env.workdir)).toEqual([]);
    });

    it("an existing name is a conflict, nothing is written, the existing file is untouched", async () => {
      writeFileSync(env.at("b.txt"), "existing");
      await expectCode(
        () =>
          env.fs.writeBatch("", [
            { name: "a.txt", source: "1" },
            { name: "b.txt", source: "2" },
          ]),
        "conflict",
        "name_exists",
      );
      expect(namesIn(env.workdir)).toEqual(["b.txt"]);
      expect(readFileSync(env.at("b.txt"), "utf8")).toBe("existing");
    });

    for (const bad of ["", ".", "..", "a/b", "a\\b", "x".repeat(256), "a\u0000b", "a\nb"]) {
      it(`a bad name ${JSON.stringify(bad.length > 20 ? `${bad.slice(0, 8)}…` : bad)} is invalid and nothing is written`, async () => {
        await expectCode(
          () =>
            env.fs.writeBatch("", [
              { name: "ok.txt", source: "1" },
              { name: bad, source: "2" },
            ]),
          "invalid_request",
        );
        expect(namesIn(env.workdir)).toEqual([]);
      });
    }

    it("a failure mid-batch leaves nothing behind", async () => {
      async function* failing() {
        yield Buffer.from("partial");
        throw new Error("S3 stream broke");
      }
      await expect(
        env.fs.writeBatch("", [
          { name: "a.txt", source: "1" },
          { name: "b.txt", source: "2" },
          { name: "c.txt", source: failing() },
          { name: "d.txt", source: "4" },
        ]),
      ).rejects.toThrow("S3 stream broke");
      expect(namesIn(env.workdir)).toEqual([]);
    });

    it("a name that appears while the batch is written: conflict, the batch is rolled back, theirs survives", async () => {
      async function* late() {
        yield Buffer.from("late");
        writeFileSync(env.at("a.txt"), "theirs");
      }
      await expectCode(
        () =>
          env.fs.writeBatch("", [
            { name: "a.txt", source: "ours" },
            { name: "b.txt", source: late() },
          ]),
        "conflict",
      );
      expect(namesIn(env.workdir)).toEqual(["a.txt"]);
      expect(readFileSync(env.at("a.txt"), "utf8")).toBe("theirs");
    });

    it("limits: per file, in total, and file count", async () => {
      await expectCode(
        () => env.fs.writeBatch("", [{ name: "a", source: "12345" }], { maxFileBytes: 4 }),
        "payload_too_large",
      );
      await expectCode(
        () =>
          env.fs.writeBatch(
            "",
            [
              { name: "a", source: "123" },
              { name: "b", source: "456" },
            ],
            { maxBytes: 5 },
          ),
        "payload_too_large",
      );
      await expectCode(
        () =>
          env.fs.writeBatch(
            "",
            [
              { name: "a", source: "1" },
              { name: "b", source: "2" },
            ],
            { maxFiles: 1 },
          ),
        "payload_too_large",
      );
      await expectCode(() => env.fs.writeBatch("", []), "invalid_request");
      expect(namesIn(env.workdir)).toEqual([]);
    });
  });

  describe("reads", () => {
    beforeEach(() => {
      writeFileSync(env.at("data.bin"), Buffer.from("0123456789"));
      mkdirSync(env.at("dir"));
    });

    it("reads whole files within the limit", async () => {
      expect((await env.fs.readFile("data.bin")).toString()).toBe("0123456789");
      await expectCode(() => env.fs.readFile("data.bin", { maxBytes: 9 }), "payload_too_large");
    });

    it("streams a byte range, clamped to the size seen at open", async () => {
      const reader = await env.fs.openRead("data.bin");
      expect(reader.info.size).toBe(10);
      const body = await new Response(reader.stream({ range: { start: 2, end: 100 } })).text();
      expect(body).toBe("23456789");
      const again = await env.fs.openRead("data.bin");
      expect(await new Response(again.stream({ range: { start: 3, end: 4 } })).text()).toBe("34");
    });

    it("a directory is invalid, a missing file not_found, the root invalid", async () => {
      await expectCode(() => env.fs.readFile("dir"), "invalid_request", "is_a_directory");
      await expectCode(() => env.fs.readFile("nope"), "not_found");
      await expectCode(() => env.fs.readFile("data.bin/x"), "not_found");
      await expectCode(() => env.fs.readFile(""), "invalid_request");
    });

    it("stat reports files and directories", async () => {
      expect(await env.fs.stat("data.bin")).toMatchObject({ type: "file", size: 10 });
      expect(await env.fs.stat("dir")).toMatchObject({ type: "dir", name: "dir" });
      expect(await env.fs.stat("")).toMatchObject({ type: "dir" });
    });
  });
});

describe.each(RESOLVER_KINDS)("modes and ownership (%s resolver)", (kind) => {
  let env: WorkspaceEnv;
  let umask: number;
  beforeEach(async () => {
    umask = process.umask(0o022);
    env = await setupWorkspace(kind);
  });
  afterEach(async () => {
    process.umask(umask);
    await env.cleanup();
  });

  for (const mask of [0o022, 0o077, 0o277]) {
    it(`new dirs are 0700 and new files 0600 under umask ${mask.toString(8).padStart(3, "0")}`, async () => {
      process.umask(mask);
      await env.fs.mkdir("m");
      await env.fs.mkdir("p/q", { parents: true });
      await env.fs.writeFile("m/f.txt", "x");
      await env.fs.writeBatch("b", [{ name: "g.txt", source: "y" }], { parents: true });
      await env.fs.copy("m", "m2", { recursive: true });
      await env.fs.copy("m/f.txt", "f2.txt");
      process.umask(0o022);
      for (const dir of ["m", "p", "p/q", "b", "m2"]) expect(mode(env.at(dir)), dir).toBe(0o700);
      for (const file of ["m/f.txt", "b/g.txt", "m2/f.txt", "f2.txt"])
        expect(mode(env.at(file)), file).toBe(0o600);
      expect(mode(env.workspace)).toBe(0o700);
      expect(mode(join(env.workspace, "projects"))).toBe(0o700);
      expect(mode(env.workdir)).toBe(0o700);
    });
  }

  it("with an owner, the workspace and what the layer creates belong to the sandbox user", async () => {
    const sys = createLibcSyscalls();
    const users = createUserWorkspaces({
      dataRoot: env.dataRoot,
      sys,
      resolver: createPathResolver(sys, { kind }),
      owner: { uid: 1000, gid: 1000 },
    });
    const fs = await users.ensureManagedWorkdir("dave", WORKDIR);
    try {
      await fs.writeFile("uploads/a.txt", "x", { parents: true });
      const base = join(env.dataRoot, "users", "dave");
      for (const path of [
        "workspace",
        "workspace/projects",
        `workspace/${WORKDIR}`,
        `workspace/${WORKDIR}/uploads`,
        `workspace/${WORKDIR}/uploads/a.txt`,
      ]) {
        expect(statSync(join(base, path)).uid, path).toBe(1000);
        expect(statSync(join(base, path)).gid, path).toBe(1000);
      }
      expect(statSync(base).uid).toBe(process.getuid?.());
      expect(statSync(join(env.dataRoot, "users")).uid).toBe(process.getuid?.());
    } finally {
      fs.close();
    }
  });
});
