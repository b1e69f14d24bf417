import { describe, expect, test } from "vitest";
import {
  boundedText,
  decodeCutUtf8,
} from "../../../agent-host/attachments/extraction/bounded-text.ts";
import { extractionKindOf } from "../../../agent-host/attachments/extraction/extraction-kind.ts";
import {
  candidateNames,
  MAX_IMPORTED_NAME_BYTES,
} from "../../../agent-host/attachments/unique-name.ts";
import { utf8ByteLength } from "../../../shared/paths/text-checks.ts";

describe("candidateNames", () => {
  test("the name, then numbered before the extension, then random", () => {
    const names = [...candidateNames("report.pdf", 3, 2)];
    expect(names.slice(0, 4)).toEqual([
      "report.pdf",
      "report (1).pdf",
      "report (2).pdf",
      "report (3).pdf",
    ]);
    expect(names.slice(4)).toHaveLength(2);
    for (const name of names.slice(4)) expect(name).toMatch(/^report \([0-9a-f]{8}\)\.pdf$/);
  });

  test("no extension, a leading dot, a long pseudo-extension", () => {
    expect([...candidateNames("Makefile", 1, 0)]).toEqual(["Makefile", "Makefile (1)"]);
    expect([...candidateNames("env", 1, 0)]).toEqual(["env", "env (1)"]);
    expect([...candidateNames("notes.from the long meeting", 1, 0)]).toEqual([
      "notes.from the long meeting",
      "notes.from the long meeting (1)",
    ]);
  });

  test("every candidate leaves room for `.md`", () => {
    for (const name of candidateNames(`${"ü".repeat(140)}.txt`, 100, 1)) {
      expect(utf8ByteLength(name)).toBeLessThanOrEqual(MAX_IMPORTED_NAME_BYTES);
      expect(name.endsWith(".txt")).toBe(true);
    }
  });
});

describe("extractionKindOf", () => {
  test.each([
    ["text/plain", "a.bin", "text"],
    ["Text/Markdown; charset=UTF-8", "a", "text"],
    ["text/csv", "a.csv", "text"],
    ["application/json", "a.json", "text"],
    ["application/ld+json", "a.jsonld", "text"],
    ["text/html", "a.html", "html"],
    ["application/pdf", "a.pdf", "pdf"],
    ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", "a.docx", "docx"],
    ["application/octet-stream", "notes.md", "text"],
    ["application/octet-stream", "REPORT.PDF", "pdf"],
    ["application/octet-stream", "archive.zip", undefined],
    ["application/octet-stream", "noextension", undefined],
    ["image/png", "a.txt", undefined],
    ["application/zip", "a.docx", undefined],
  ])("%s + %s → %s", (type, name, kind) => {
    expect(extractionKindOf(type, name)).toBe(kind);
  });
});

describe("bounded text", () => {
  test("keeps everything under the bound", () => {
    const out = boundedText(10);
    expect(out.append("abc")).toBe(true);
    expect(out.append("def")).toBe(true);
    expect(out.result()).toEqual({ text: "abcdef", truncated: false });
  });

  test("cuts at the bound between characters and marks truncation", () => {
    const out = boundedText(5);
    out.append("ab");
    expect(out.append("cé€")).toBe(false);
    expect(out.full).toBe(true);
    expect(out.result()).toEqual({ text: "abcé", truncated: true });
    expect(out.append("more")).toBe(false);
  });

  test("decodeCutUtf8 drops a character split at the end only", () => {
    const bytes = new TextEncoder().encode("a€b😀");
    expect(decodeCutUtf8(bytes)).toBe("a€b😀");
    expect(decodeCutUtf8(bytes.subarray(0, bytes.length - 1))).toBe("a€b");
    expect(decodeCutUtf8(bytes.subarray(0, 3))).toBe("a");
    expect(decodeCutUtf8(bytes.subarray(0, 5))).toBe("a€b");
    expect(decodeCutUtf8(new Uint8Array([0x61, 0xff, 0x62]))).toBe("a\ufffdb");
  });
});
