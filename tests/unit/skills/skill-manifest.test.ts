import { describe, expect, it } from "vitest";
import { parseSkillManifest } from "../../../agent-host/skills/skill-manifest.ts";

describe("SKILL.md front matter", () => {
  it.each([
    ["---\nname: pdf\ndescription: Split PDFs\n---\n# x", "pdf", "Split PDFs"],
    ["---\r\nname: 'it''s'\r\ndescription: \"Quoted: yes\"\r\n---\r\n", "it's", "Quoted: yes"],
    [
      "\uFEFF---\ndescription: >\n  folded over\n  two lines\nname: n\n---\n",
      "n",
      "folded over two lines",
    ],
    ["---\ndescription: |\n  block\n---\n", undefined, "block"],
    ["# no front matter\ndescription: not this", undefined, ""],
    ["---\ndescription: never closed", undefined, "never closed"],
    ["---\ndescription: tab\there\u0007bell\n---", undefined, "tab here bell"],
  ])("parses %j", (text, name, description) => {
    expect(parseSkillManifest(text, 1024)).toEqual({ name, description });
  });

  it("bounds the description", () => {
    expect(parseSkillManifest(`---\ndescription: ${"x".repeat(50)}\n---`, 10).description).toBe(
      `${"x".repeat(9)}…`,
    );
  });
});
