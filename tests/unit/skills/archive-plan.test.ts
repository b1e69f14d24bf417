import { describe, expect, it } from "vitest";
import { createArchivePlan, splitArchiveName } from "../../../agent-host/skills/archive-plan.ts";
import { ArchiveRejection } from "../../../agent-host/skills/archive-rejection.ts";
import { DEFAULT_SKILL_LIMITS } from "../../../agent-host/skills/skill-limits.ts";

const limits = DEFAULT_SKILL_LIMITS;

function problemOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof ArchiveRejection) return err.problem;
    throw err;
  }
}

describe("archive entry names", () => {
  it.each([
    ["SKILL.md", ["SKILL.md"], false],
    ["./SKILL.md", ["SKILL.md"], false],
    ["a/b/c.txt", ["a", "b", "c.txt"], false],
    ["dir/", ["dir"], true],
    ["..foo", ["..foo"], false],
    ["a/.hidden", ["a", ".hidden"], false],
  ])("accepts %j", (name, components, trailingSlash) => {
    expect(splitArchiveName(name, limits)).toEqual({ components, trailingSlash });
  });

  it.each(["./", "."])("treats %j as the archive root", (name) => {
    expect(splitArchiveName(name, limits)).toBeNull();
  });

  it.each([
    "",
    "/etc/passwd",
    "C:evil",
    "c:/evil",
    "../evil",
    "a/../../evil",
    "a/..",
    "a/./b",
    "a//b",
    "././x",
    "a\\..\\evil",
    "bad\u0000name",
    "new\nline",
    "del\u007f",
    `${"a/".repeat(40)}x`,
    "x".repeat(256),
    `${"abcdefgh/".repeat(120)}x`,
  ])("refuses %j", (name) => {
    expect(problemOf(() => splitArchiveName(name, limits))).toBe("unsafe_name");
  });
});

describe("archive plan", () => {
  const file = (name: string, size = 1, mode = 0o644) => ({
    name,
    kind: "file" as const,
    size,
    mode,
  });
  const dir = (name: string) => ({ name, kind: "dir" as const, size: 0, mode: 0o755 });

  it("keeps exec bits, creates parents implicitly, and finds the skill root", () => {
    const plan = createArchivePlan(limits);
    expect(plan.add(file("tool/bin/run", 3, 0o755))).toMatchObject({
      components: ["tool", "bin", "run"],
      exec: true,
    });
    expect(plan.add(dir("tool/"))).toMatchObject({ kind: "dir" });
    plan.add(file("tool/SKILL.md"));
    expect(plan.skillRoot()).toEqual(["tool"]);

    const flat = createArchivePlan(limits);
    flat.add(file("SKILL.md"));
    flat.add(file("x/y"));
    expect(flat.skillRoot()).toEqual([]);
  });

  it.each([
    ["the same file twice", [file("a"), file("a")], "duplicate_entry"],
    ["the same name after ./", [file("a"), file("./a")], "duplicate_entry"],
    ["a directory listed twice", [dir("d/"), dir("d/")], "duplicate_entry"],
    ["a file, then a directory of its name", [file("a"), file("a/b")], "duplicate_entry"],
    ["a directory, then a file of its name", [file("a/b"), file("a")], "duplicate_entry"],
    ["a symlink", [{ name: "l", kind: "symlink" as const, size: 0, mode: 0 }], "link_entry"],
    ["a hard link", [{ name: "l", kind: "hardlink" as const, size: 0, mode: 0 }], "link_entry"],
    ["a device", [{ name: "d", kind: "device" as const, size: 0, mode: 0 }], "special_entry"],
    ["a FIFO", [{ name: "p", kind: "fifo" as const, size: 0, mode: 0 }], "special_entry"],
    ["a file named like a directory", [file("a/")], "malformed"],
    ["a file over the size limit", [file("big", limits.maxFileBytes + 1)], "too_large"],
  ])("refuses %s", (_what, entries, problem) => {
    const plan = createArchivePlan(limits);
    expect(
      problemOf(() => {
        for (const entry of entries) plan.add(entry);
      }),
    ).toBe(problem);
  });

  it("bounds entries and total declared size", () => {
    const counted = createArchivePlan({ ...limits, maxEntries: 2 });
    counted.add(file("a"));
    counted.add(file("b"));
    expect(problemOf(() => counted.add(file("c")))).toBe("too_many_entries");
    const sized = createArchivePlan({ ...limits, maxSkillBytes: 10, maxFileBytes: 10 });
    sized.add(file("a", 6));
    expect(problemOf(() => sized.add(file("b", 6)))).toBe("too_large");
  });

  it.each([
    ["no SKILL.md", ["README.md"]],
    ["SKILL.md two levels down", ["a/b/SKILL.md"]],
    ["two top directories", ["a/SKILL.md", "b/x"]],
    ["a directory called SKILL.md", []],
  ])("needs a SKILL.md at the top: %s", (_what, names) => {
    const plan = createArchivePlan(limits);
    for (const name of names) plan.add(file(name));
    if (names.length === 0) plan.add(dir("SKILL.md/"));
    expect(problemOf(() => plan.skillRoot())).toBe("missing_skill_md");
  });
});
