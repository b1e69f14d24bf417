import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { chunks, expectCode, mode, namesIn, RESOLVER_KINDS } from "./harness.ts";
import { workspacePerTest } from "./workspace-per-test.ts";

describe.each(RESOLVER_KINDS)("writes (%s resolver)", (kind) => {
  const env = workspacePerTest(kind);

  describe("batch", () => {
    it("writes every file, 0600, in a directory created on first use", async () => {
      const infos = await env().fs.writeBatch(
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
      expect(namesIn(env().at("uploads"))).toEqual(["a.txt", "b.txt"]);
      expect(mode(env().at("uploads"))).toBe(0o700);
      expect(mode(env().at("uploads/b.txt"))).toBe(0o600);
    });

    it("a duplicate name is a conflict and nothing is written", async () => {
      const err = await expectCode(
        () =>
          env().fs.writeBatch("", [
            { name: "a.txt", source: "1" },
            { name: "b.txt", source: "2" },
            { name: "a.txt", source: "3" },
          ]),
        "conflict",
        "duplicate_name",
      );
      expect(err.details?.names).toEqual(["a.txt"]);
      expect(namesIn(env().workdir)).toEqual([]);
    });

    it("an existing name is a conflict, nothing is written, the existing file is untouched", async () => {
      writeFileSync(env().at("b.txt"), "existing");
      await expectCode(
        () =>
          env().fs.writeBatch("", [
            { name: "a.txt", source: "1" },
            { name: "b.txt", source: "2" },
          ]),
        "conflict",
        "name_exists",
      );
      expect(namesIn(env().workdir)).toEqual(["b.txt"]);
      expect(readFileSync(env().at("b.txt"), "utf8")).toBe("existing");
    });

    for (const bad of ["", ".", "..", "a/b", "a\\b", "x".repeat(256), "a\u0000b", "a\nb"]) {
      it(`a bad name ${JSON.stringify(bad.length > 20 ? `${bad.slice(0, 8)}…` : bad)} is invalid and nothing is written`, async () => {
        await expectCode(
          () =>
            env().fs.writeBatch("", [
              { name: "ok.txt", source: "1" },
              { name: bad, source: "2" },
            ]),
          "invalid_request",
        );
        expect(namesIn(env().workdir)).toEqual([]);
      });
    }

    it("a failure mid-batch leaves nothing behind", async () => {
      async function* failing() {
        yield Buffer.from("partial");
        throw new Error("S3 stream broke");
      }
      await expect(
        env().fs.writeBatch("", [
          { name: "a.txt", source: "1" },
          { name: "b.txt", source: "2" },
          { name: "c.txt", source: failing() },
          { name: "d.txt", source: "4" },
        ]),
      ).rejects.toThrow("S3 stream broke");
      expect(namesIn(env().workdir)).toEqual([]);
    });

    it("a name that appears while the batch is written: conflict, the batch is rolled back, theirs survives", async () => {
      async function* late() {
        yield Buffer.from("late");
        writeFileSync(env().at("a.txt"), "theirs");
      }
      await expectCode(
        () =>
          env().fs.writeBatch("", [
            { name: "a.txt", source: "ours" },
            { name: "b.txt", source: late() },
          ]),
        "conflict",
      );
      expect(namesIn(env().workdir)).toEqual(["a.txt"]);
      expect(readFileSync(env().at("a.txt"), "utf8")).toBe("theirs");
    });

    it("limits: per file, in total, and file count", async () => {
      await expectCode(
        () => env().fs.writeBatch("", [{ name: "a", source: "12345" }], { maxFileBytes: 4 }),
        "payload_too_large",
      );
      await expectCode(
        () =>
          env().fs.writeBatch(
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
          env().fs.writeBatch(
            "",
            [
              { name: "a", source: "1" },
              { name: "b", source: "2" },
            ],
            { maxFiles: 1 },
          ),
        "payload_too_large",
      );
      await expectCode(() => env().fs.writeBatch("", []), "invalid_request");
      expect(namesIn(env().workdir)).toEqual([]);
    });
  });
});
