import { describe, expect, test } from "vitest";
import { contentTypeProblem } from "../../../functions/attachments/content-type-check.ts";
import {
  FALLBACK_ATTACHMENT_NAME,
  MAX_ATTACHMENT_NAME_BYTES,
  sanitizeAttachmentName,
} from "../../../functions/attachments/sanitize-attachment-name.ts";
import { attachmentFileNameProblem } from "../../../shared/contracts/attachment.ts";
import { utf8ByteLength } from "../../../shared/paths/text-checks.ts";

describe("sanitizeAttachmentName", () => {
  test.each([
    ["report.pdf", "report.pdf"],
    ["../../etc/passwd", "passwd"],
    ["/etc/passwd", "passwd"],
    ["C:\\Users\\me\\notes.txt", "notes.txt"],
    ["dir/", "dir"],
    ["a\\b/c", "c"],
    ["tab\there", "tab_here"],
    ["line\nbreak\r.txt", "line_break_.txt"],
    ["nul\u0000.txt", "nul_.txt"],
    ["del\u007f.txt", "del_.txt"],
    ["invoice\u202Efdp.exe", "invoice_fdp.exe"],
    ["  spaced  ", "spaced"],
    ["...dots...", "dots"],
    [".env", "env"],
    ["résumé (1).docx", "résumé (1).docx"],
    ["e\u0301.txt", "é.txt"],
    ["", FALLBACK_ATTACHMENT_NAME],
    ["..", FALLBACK_ATTACHMENT_NAME],
    [" / . / ", FALLBACK_ATTACHMENT_NAME],
    ["\ud800lone.txt", "\ufffdlone.txt"],
  ])("%j → %j", (raw, expected) => {
    expect(sanitizeAttachmentName(raw)).toBe(expected);
  });

  test("long names are shortened between characters, keeping the extension", () => {
    const name = sanitizeAttachmentName(`${"é".repeat(300)}.pdf`);
    expect(utf8ByteLength(name)).toBeLessThanOrEqual(MAX_ATTACHMENT_NAME_BYTES);
    expect(name.endsWith(".pdf")).toBe(true);
    expect(name.isWellFormed()).toBe(true);
    const noExtension = sanitizeAttachmentName("x".repeat(1000));
    expect(noExtension).toBe("x".repeat(MAX_ATTACHMENT_NAME_BYTES));
  });

  test("every result is a valid Workdir entry name", () => {
    const samples = [
      "",
      "..",
      "../../x",
      "a/b\\c",
      "\u0000\u0001",
      "🙂".repeat(200),
      ". .",
      "x".repeat(2000),
    ];
    for (const raw of samples) {
      expect(
        attachmentFileNameProblem(sanitizeAttachmentName(raw)),
        JSON.stringify(raw),
      ).toBeUndefined();
    }
  });
});

describe("contentTypeProblem", () => {
  test.each([
    ["application/pdf"],
    ["text/plain; charset=utf-8"],
    ['text/plain;charset="utf-8"'],
    ["application/vnd.ms-excel"],
  ])("accepts %j", (type) => {
    expect(contentTypeProblem(type)).toBeUndefined();
  });

  test.each([
    ["pdf"],
    ["text/plain\r\nX-Evil: 1"],
    ["text/"],
    ["/plain"],
    ["text/plain; charset"],
    ["text plain"],
  ])("refuses %j", (type) => {
    expect(contentTypeProblem(type)).toBeDefined();
  });
});
