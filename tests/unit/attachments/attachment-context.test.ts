import { describe, expect, test } from "vitest";
import {
  ATTACHMENT_CONTEXT_CLOSE,
  ATTACHMENT_CONTEXT_OPEN,
  type ContextAttachment,
  hasAttachmentContext,
  MAX_LISTED_ATTACHMENTS,
  withAttachmentContext,
} from "../../../agent-host/attachments/attachment-context.ts";

const WORKDIR = "projects/0b9f7a1e-1b2c-4d3e-8f90-123456789abc";
const ROOT = `/home/gem/user-data/${WORKDIR}`;

const plain: ContextAttachment = {
  fileName: "data.csv",
  path: "uploads/data.csv",
  originalPath: "uploads/data.csv",
};
const parsed: ContextAttachment = {
  fileName: "report (1).pdf",
  path: "uploads/attachments/report (1).pdf.md",
  originalPath: "uploads/report (1).pdf",
};

describe("withAttachmentContext", () => {
  test("appends a block listing names and sandbox paths after the user's text", () => {
    const text = withAttachmentContext("What is in these?", [plain, parsed], WORKDIR);
    expect(text).toBe(
      [
        "What is in these?",
        "",
        ATTACHMENT_CONTEXT_OPEN,
        "Files attached to this conversation (read them with your tools when they are relevant):",
        `- data.csv: ${ROOT}/uploads/data.csv`,
        `- report (1).pdf: ${ROOT}/uploads/report (1).pdf (extracted text: ${ROOT}/uploads/attachments/report (1).pdf.md)`,
        ATTACHMENT_CONTEXT_CLOSE,
      ].join("\n"),
    );
    expect(hasAttachmentContext(text)).toBe(true);
  });

  test("is idempotent: an already injected text is returned as is", () => {
    const once = withAttachmentContext("hi", [plain], WORKDIR);
    expect(withAttachmentContext(once, [plain, parsed], WORKDIR)).toBe(once);
    expect(withAttachmentContext(`${once}\n`, [plain], WORKDIR)).toBe(`${once}\n`);
  });

  test("no attachments: the text unchanged; many: the newest listed, the rest counted", () => {
    expect(withAttachmentContext("hi", [], WORKDIR)).toBe("hi");
    const many = Array.from({ length: MAX_LISTED_ATTACHMENTS + 3 }, (_, i) => ({
      ...plain,
      fileName: `f${i}.txt`,
      path: `uploads/f${i}.txt`,
      originalPath: `uploads/f${i}.txt`,
    }));
    const text = withAttachmentContext("hi", many, WORKDIR);
    expect(text).toContain(`- (3 earlier attachments are also in ${ROOT}/uploads/)`);
    expect(text).not.toContain("- f2.txt:");
    expect(text).toContain("- f3.txt:");
    expect(text).toContain(`- f${MAX_LISTED_ATTACHMENTS + 2}.txt:`);
  });

  test("a bad Workdir path throws rather than pointing outside the mount", () => {
    expect(() => withAttachmentContext("hi", [plain], "../etc")).toThrow();
  });
});
