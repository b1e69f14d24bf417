import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ContentHashBuilder } from "../../../agent-host/skills/content-hash.ts";

const digest = (text: string) => createHash("sha256").update(text).digest();
const path = (p: string) => Buffer.from(p);

function hashOf(build: (h: ContentHashBuilder) => void): string {
  const builder = new ContentHashBuilder();
  build(builder);
  return builder.digest();
}

describe("content hash", () => {
  const base = (h: ContentHashBuilder) => {
    h.addFile(path("SKILL.md"), false, 2, digest("hi"));
    h.addDirectory(path("bin"));
    h.addFile(path("bin/run"), true, 3, digest("run"));
  };

  it("is sha256 and independent of the order entries were seen in", () => {
    const one = hashOf(base);
    const other = hashOf((h) => {
      h.addFile(path("bin/run"), true, 3, digest("run"));
      h.addDirectory(path("bin"));
      h.addFile(path("SKILL.md"), false, 2, digest("hi"));
    });
    expect(one).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(other).toBe(one);
  });

  it.each([
    [
      "an exec bit",
      (h: ContentHashBuilder) => {
        h.addFile(path("SKILL.md"), true, 2, digest("hi"));
        h.addDirectory(path("bin"));
        h.addFile(path("bin/run"), true, 3, digest("run"));
      },
    ],
    [
      "bytes",
      (h: ContentHashBuilder) => {
        h.addFile(path("SKILL.md"), false, 2, digest("ho"));
        h.addDirectory(path("bin"));
        h.addFile(path("bin/run"), true, 3, digest("run"));
      },
    ],
    [
      "a path",
      (h: ContentHashBuilder) => {
        h.addFile(path("SKILL.md"), false, 2, digest("hi"));
        h.addDirectory(path("bin"));
        h.addFile(path("bin/rum"), true, 3, digest("run"));
      },
    ],
    [
      "an empty directory more",
      (h: ContentHashBuilder) => {
        base(h);
        h.addDirectory(path("empty"));
      },
    ],
  ])("changes with %s", (_what, build) => {
    expect(hashOf(build)).not.toBe(hashOf(base));
  });

  it("tells a file from a directory of the same name", () => {
    const asDir = hashOf((h) => h.addDirectory(path("x")));
    const asFile = hashOf((h) => h.addFile(path("x"), false, 0, digest("")));
    expect(asDir).not.toBe(asFile);
  });
});
