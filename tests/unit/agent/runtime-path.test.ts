import { describe, expect, it } from "vitest";
import { resolveRuntimePath } from "../../../agent-host/runs/agent/runtime-path.ts";
import { WORKDIR } from "./loop-harness.ts";

const ok = (workspacePath: string) => ({
  ok: true,
  workspacePath,
  runtimePath: `/home/gem/user-data${workspacePath === "" ? "" : `/${workspacePath}`}`,
});

describe("resolveRuntimePath", () => {
  it.each([
    ["notes.txt", `${WORKDIR}/notes.txt`],
    ["./outputs/a.txt", `${WORKDIR}/outputs/a.txt`],
    [".", WORKDIR],
    ["outputs//x/", `${WORKDIR}/outputs/x`],
    ["../other/file", "projects/other/file"],
    ["/home/gem/user-data/projects/p/x", "projects/p/x"],
    ["/home/gem/user-data", ""],
    ["~/user-data/a", "a"],
  ])("%s → %s", (input, expected) => {
    expect(resolveRuntimePath(input, WORKDIR, "read")).toEqual(ok(expected));
  });

  it.each([
    ["/etc/passwd", "path_outside_user_data"],
    ["../../../etc/passwd", "path_outside_user_data"],
    ["../../..", "path_outside_user_data"],
    ["/home/gem/user-data/../skills/x", "skills_read_only"],
    ["/home/gem/skills/x/SKILL.md", "skills_read_only"],
    ["/tmp/x", "path_outside_user_data"],
    ["~/.bashrc", "path_outside_user_data"],
    ["/home/gem/user-data-evil/x", "path_outside_user_data"],
  ])("write %s is refused (%s)", (input, reason) => {
    const result = resolveRuntimePath(input, WORKDIR, "write");
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.refusal.isError).toBe(true);
      expect(result.refusal.details).toMatchObject({ error_code: "forbidden", reason });
    }
  });

  describe("file view workdir", () => {
    it.each([
      ["notes.txt", `${WORKDIR}/notes.txt`],
      [`/home/gem/user-data/${WORKDIR}/outputs/a`, `${WORKDIR}/outputs/a`],
      ["sub/../b", `${WORKDIR}/b`],
    ])("write %s inside the Workdir is allowed", (input, expected) => {
      expect(resolveRuntimePath(input, WORKDIR, "write", "workdir")).toEqual(ok(expected));
    });

    it.each([
      "../other/file",
      "/home/gem/user-data/notes.txt",
      `/home/gem/user-data/${WORKDIR}-evil/x`,
      "sub/../../x",
      "~/user-data/a",
    ])("write %s outside it is refused (outside_workdir_view)", (input) => {
      const result = resolveRuntimePath(input, WORKDIR, "write", "workdir");
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.refusal.details).toMatchObject({
          error_code: "forbidden",
          reason: "outside_workdir_view",
        });
        expect(result.refusal.content).toContain(`write under /home/gem/user-data/${WORKDIR}`);
      }
    });

    it("still reads the rest of the workspace", () => {
      expect(resolveRuntimePath("../other/file", WORKDIR, "read", "workdir")).toEqual(
        ok("projects/other/file"),
      );
    });
  });

  it("reading a skill points to bash", () => {
    const result = resolveRuntimePath("/home/gem/skills/pdf/SKILL.md", WORKDIR, "read");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.refusal.content).toContain("cat /home/gem/skills/pdf/SKILL.md");
  });

  it("refuses NUL", () => {
    expect(resolveRuntimePath("a\u0000b", WORKDIR, "read").ok).toBe(false);
  });
});
